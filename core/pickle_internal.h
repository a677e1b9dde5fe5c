// fw::load's route to torch.save files (core/serialize.cpp): pickle_load reading the archive's
// records straight from an open file with pread, so tensor data is copied once.
#pragma once
#include <cstddef>
#include <cstdint>

#include "fw/ivalue.h"

namespace fw::detail {
// The value in the torch.save file open at `fd` (`size` bytes), as pickle_load.
IValue pickle_load_file(int fd, uint64_t size);
// Zip's CRC-32 of n bytes (the carry-less multiply path where the CPU has it, else tables).
uint32_t zip_crc32(const unsigned char* p, size_t n);
}  // namespace fw::detail
