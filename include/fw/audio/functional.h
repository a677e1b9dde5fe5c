#pragma once
#include "fw/fw.h"

namespace fw::audio {}
