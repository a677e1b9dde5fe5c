// fw::audio::kaldi_io: Kaldi tables (archives and script files), data directories, alignments and
// the usual feature post-processing of Kaldi recipes (add-deltas, per-speaker CMVN).
//
// Formats (checked against Kaldi's public sources: base/io-funcs-inl.h, util/kaldi-holder-inl.h,
// util/table-types.h, matrix/kaldi-matrix.cc, featbin/extract-segments.cc, feat/feature-functions.cc,
// transform/cmvn.cc):
//   archive entry     "<key> " then the object. Keys are non-empty and free of whitespace.
//   binary object     starts with "\0B". A float matrix is "\0B" "FM " '\4'<int32 rows>
//                     '\4'<int32 cols> <rows*cols float32, row-major>; a double matrix the same
//                     with "DM " and float64 (Kaldi's Matrix::Write).
//                     An int32 vector (Kaldi's Int32VectorWriter = BasicVectorHolder<int32>, what
//                     ali-to-pdf, align-equal etc. write) is "\0B" '\4'<int32 n> then n times
//                     '\4'<int32 value>: every element carries its size byte (WriteBasicType). This is
//                     NOT the layout of WriteIntegerVector ('\4'<n> then raw elements), which
//                     Kaldi objects use inside their own Write methods (model files), not for
//                     alignment tables. kaldiio 2.18 writes and reads the same layout; the tests
//                     compare fw's bytes with archives it wrote (tests/fixtures/audio/kaldi_io).
//                     Integers and floats are little-endian; fw runs on little-endian hosts only.
//   text object       matrix: " [\n  1 2 3 \n  4 5 6 ]\n" (" [ ]\n" when empty); rows end at a newline
//                     (or ';'), the matrix at ']'. int32 vector: "1 2 3 \n" up to the end of the line
//                     (an ark,t alignment line is "utt-id 1 2 3").
//   script file       "<key> <rxfilename>" per line. An rxfilename is "path", "path:offset" (byte
//                     offset of the object, i.e. of its "\0B" or, for text, of what follows
//                     "<key> "), "cmd |" (a shell command whose output holds one object) or "-".
//   specifiers        read:  "ark:X", "scp:X" with options among b t o no s ns cs ncs p np bg (parsed
//                     and otherwise ignored: binary/text is detected per object, errors always
//                     throw, also with "p"). X is a file, "-" (stdin) or "cmd |".
//                     write: "ark:X", "ark,t:X" (text), "ark,scp:A,S" / "ark,scp,t:A,S" (archive
//                     plus a script file of "key A:offset" lines), options b t f nf p. X is a file,
//                     "-" (stdout, not with scp) or "| cmd".
// Not supported (each is a clear fw::Error): compressed matrices (CM, CM2, CM3), big-endian
// objects, scp range specifiers ("ark:123[0:9]"), "scp:" output (one file per key).
//
// Every malformed input is an fw::Error naming the function, the file (and line or byte offset)
// and the offending values; sizes are checked against the bytes actually present before anything
// is allocated, so a corrupt or hostile archive cannot make fw allocate what the file does not hold.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fw/audio/io.h"
#include "fw/tensor.h"

namespace fw::audio {

// Decodes an audio file held in memory (any format libsndfile reads), with the checks of
// fw::audio::load: same float32 samples in [-1, 1], same rejection of truncated WAV data chunks
// and of streams that decode fewer frames than they declare. `name` appears in error messages.
// Only normalize = true is supported (float32 out). Defined in audio/io_memory.cpp; it lives
// here because data directories need it for "cmd |" entries of wav.scp.
std::pair<Tensor, int64_t> load_from_memory(const void* data, size_t size, const LoadOptions& options = {},
                                            const std::string& name = "<memory>");

}  // namespace fw::audio

namespace fw::audio::kaldi_io {

// ---------------------------------------------------------------------------------------------
// Specifiers
// ---------------------------------------------------------------------------------------------

struct ReadSpecifier {
  enum Kind { Archive, Script } kind = Archive;
  std::string path;  // file, "-" or "cmd |"
};
// "ark:X" / "scp:X" (with options). Throws fw::Error on anything else.
ReadSpecifier parse_rspecifier(const std::string& rspecifier);

struct WriteSpecifier {
  std::string ark;          // file, "-" or "| cmd"
  std::string scp;          // empty: no script file
  bool binary = true;       // false with the "t" option
};
// "ark:X", "ark,t:X", "ark,scp:A,S", "ark,scp,t:A,S" (options in any order). Throws fw::Error
// on anything else, including "scp:X" alone.
WriteSpecifier parse_wspecifier(const std::string& wspecifier);

// ---------------------------------------------------------------------------------------------
// Single objects
// ---------------------------------------------------------------------------------------------

// The bytes of one object as it follows "<key> " in an archive. Matrices must be 2-D; kDouble
// is written as "DM", every other real dtype as float32 "FM". Text numbers are the shortest
// decimal that reads back to the same float (Kaldi prints 7 significant digits), NaN as "nan";
// a text matrix with no rows or no columns is " [ ]" and reads back as (0, 0).
std::string matrix_bytes(const Tensor& matrix, bool binary = true);
std::string int32_vector_bytes(const std::vector<int32_t>& v, bool binary = true);

// Reads one object from an rxfilename: "path", "path:offset", "cmd |" or "-". dtype kFloat or
// kDouble: binary FM and DM are both accepted and converted, as Kaldi's readers do.
Tensor read_matrix(const std::string& rxfilename, ScalarType dtype = kFloat);
std::vector<int32_t> read_int32_vector(const std::string& rxfilename);

// Writes one object to a file (atomically: temporary file, fsync, rename), as Kaldi's
// copy-matrix writes a single matrix.
void write_matrix(const std::string& path, const Tensor& matrix, bool binary = true);

// ---------------------------------------------------------------------------------------------
// Tables: sequential readers, random-access readers, writers
// ---------------------------------------------------------------------------------------------

// What a table holds; the value type and on-disk form of each.
struct FloatMatrixHolder {   // Tensor (rows, cols) float32; reads FM, DM (converted) and text
  using Value = Tensor;
};
struct DoubleMatrixHolder {  // Tensor (rows, cols) float64; reads DM, FM (converted) and text
  using Value = Tensor;
};
struct Int32VectorHolder {   // std::vector<int32_t>; Kaldi's BasicVectorHolder<int32>
  using Value = std::vector<int32_t>;
};

// Iterates the entries of "ark:..." or "scp:..." in file order:
//   for (SequentialMatrixReader r("ark:feats.ark"); !r.done(); r.next()) use(r.key(), r.value());
// Archives are streamed (one entry in memory at a time), so pipes and stdin work. An error in
// the middle of an archive throws when next() reaches it.
template <class Holder>
class SequentialTableReader {
 public:
  using Value = typename Holder::Value;
  explicit SequentialTableReader(const std::string& rspecifier);
  ~SequentialTableReader();
  SequentialTableReader(SequentialTableReader&&) noexcept;
  SequentialTableReader& operator=(SequentialTableReader&&) noexcept;
  bool done() const;
  const std::string& key() const;  // done() must be false
  const Value& value() const;      // done() must be false
  void next();
  // Byte offset of the current object in the archive (what an scp line would point at: just
  // after "<key> "); -1 when reading through a script file.
  int64_t offset() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Looks objects up by key. "scp:X" reads the script file once and each object from its
// rxfilename when asked (the last opened file stays open). "ark:FILE" indexes the archive once
// (keys and byte offsets) and reads objects by offset. "ark:-" and "ark:cmd |" cannot be
// re-read: all objects are loaded into memory. Duplicate keys are an error. value() reuses an
// open file, so a reader must not be shared between threads without a lock.
template <class Holder>
class RandomAccessTableReader {
 public:
  using Value = typename Holder::Value;
  explicit RandomAccessTableReader(const std::string& rspecifier);
  ~RandomAccessTableReader();
  RandomAccessTableReader(RandomAccessTableReader&&) noexcept;
  RandomAccessTableReader& operator=(RandomAccessTableReader&&) noexcept;
  bool has_key(const std::string& key) const;
  Value value(const std::string& key) const;  // throws fw::Error for an unknown key
  std::vector<std::string> keys() const;      // in file order
  size_t size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Writes "<key> <object>" entries (and "key ark:offset" scp lines) as they come. Plain files
// are written under a temporary name next to the target and renamed into place by close():
// a writer destroyed without close() (an exception on the way) leaves the old files, or none.
// "-" writes to stdout and "| cmd" to a pipe; close() then checks the command's exit status.
template <class Holder>
class TableWriter {
 public:
  using Value = typename Holder::Value;
  explicit TableWriter(const std::string& wspecifier);
  ~TableWriter();
  TableWriter(TableWriter&&) noexcept;
  TableWriter& operator=(TableWriter&&) noexcept;
  void write(const std::string& key, const Value& value);
  void close();  // idempotent; write() after close() throws

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

using SequentialMatrixReader = SequentialTableReader<FloatMatrixHolder>;
using SequentialDoubleMatrixReader = SequentialTableReader<DoubleMatrixHolder>;
using SequentialInt32VectorReader = SequentialTableReader<Int32VectorHolder>;
using RandomAccessMatrixReader = RandomAccessTableReader<FloatMatrixHolder>;
using RandomAccessDoubleMatrixReader = RandomAccessTableReader<DoubleMatrixHolder>;
using RandomAccessInt32VectorReader = RandomAccessTableReader<Int32VectorHolder>;
using MatrixWriter = TableWriter<FloatMatrixHolder>;              // writes FM (float32)
using DoubleMatrixWriter = TableWriter<DoubleMatrixHolder>;       // writes DM (float64)
using Int32VectorWriter = TableWriter<Int32VectorHolder>;

// Whole tables in memory, keyed (duplicate keys are an error).
std::map<std::string, Tensor> read_matrices(const std::string& rspecifier, ScalarType dtype = kFloat);
std::map<std::string, std::vector<int32_t>> read_int32_vectors(const std::string& rspecifier);

// ---------------------------------------------------------------------------------------------
// Data directories (utils/validate_data_dir.sh conventions)
// ---------------------------------------------------------------------------------------------

struct Segment {
  std::string recording;
  double start = 0;      // seconds
  double end = -1;       // seconds; -1: to the end of the recording (as extract-segments)
  int64_t channel = -1;  // 0-based; -1: not given
  int64_t line = 0;      // line in segments, for messages
};

struct WavEntry {
  std::string rxfilename;  // a path (relative ones resolved as DataDirOptions::wav_root says) or "cmd |"
  bool is_command = false;
  int64_t line = 0;        // line in wav.scp
};

struct DataDir {
  std::string path;
  std::map<std::string, WavEntry> wav;                       // recording -> wav.scp entry
  std::map<std::string, Segment> segments;                   // utterance -> segment (may be empty)
  bool has_segments = false;
  std::map<std::string, std::string> text;                   // utterance -> transcript (may be empty)
  bool has_text = false;
  std::map<std::string, std::string> utt2spk;
  std::map<std::string, std::vector<std::string>> spk2utt;   // derived from utt2spk when absent
  bool spk2utt_derived = false;
  // reco2file_and_channel: recording -> (file id, channel letter); may be empty.
  std::map<std::string, std::pair<std::string, std::string>> reco2file_and_channel;
  // Problems that Kaldi tools would trip over but that do not stop fw: files not sorted in C
  // order (fw accepts them; utils/fix_data_dir.sh sorts them), utterances without a transcript.
  std::vector<std::string> warnings;

  std::vector<std::string> utterances() const;  // sorted (C order)
};

struct DataDirOptions {
  // Read the header of every plain-file recording and check segment times against its
  // duration (with max_overshoot). Pipe recordings are checked when their audio is loaded.
  bool check_segment_times = true;
  // A segment may end up to this many seconds past the recording (the end is then cut to the
  // recording's end, as Kaldi's extract-segments --max-overshoot does); more is an error.
  double max_overshoot = 0.5;
  // Relative file paths in wav.scp are resolved against this directory; empty: the working
  // directory, Kaldi's rule. Commands ("cmd |") always run in the working directory.
  std::string wav_root;
};

// Loads and validates a Kaldi data directory. Required: wav.scp and utt2spk. Optional: segments
// (utterances are then the segments, else the wav.scp recordings), text, spk2utt (derived from
// utt2spk when missing, cross-checked when present), reco2file_and_channel. Errors (fw::Error,
// naming file and line): missing required files, malformed lines, duplicate keys, utterances in
// text / utt2spk / spk2utt without audio, utterances without a speaker, speakers in spk2utt that
// disagree with utt2spk, segments of unknown recordings, bad times or channels, segment times out
// of range, wav.scp paths that do not exist. Unsorted files and utterances without a transcript
// are accepted and listed in DataDir::warnings. Blank lines are skipped.
DataDir load_data_dir(const std::string& path, const DataDirOptions& options = {});

// The waveform of an utterance: (channels, samples) float32 in [-1, 1] as fw::audio::load gives
// it (multiply by 32768 for Kaldi's int16 scale), and the sample rate. With segments it is the
// slice [trunc(start * rate), trunc(end * rate)) of the recording (extract-segments' rounding),
// one channel when the segment names one (all channels otherwise). "cmd |" entries are run with
// /bin/sh (popen); a non-zero exit status is an error.
std::pair<Tensor, int64_t> load_utterance_audio(const DataDir& dir, const std::string& utt,
                                                const DataDirOptions& options = {});

// ---------------------------------------------------------------------------------------------
// Alignments
// ---------------------------------------------------------------------------------------------

// Alignments (per-frame ids) from an int32-vector table: a Kaldi rspecifier ("ark:ali.ark",
// "ark:gunzip -c ali.1.gz |", "scp:ali.scp") or a plain path, read as an archive. Binary and text
// entries ("utt-id id id ...", as ali-to-pdf ... ark,t:- prints) are both accepted.
std::map<std::string, std::vector<int32_t>> read_alignments(const std::string& rspecifier_or_path);

// Checks that each utterance's alignment has as many ids as its features have frames. A length
// difference larger than `tolerance` frames throws, naming the utterance and both lengths; a
// missing alignment throws. Within the tolerance the alignment is made to fit explicitly: extra
// ids at the end are dropped, missing ones are filled by repeating the last id (an empty
// alignment for a non-empty utterance throws). Returns the fitted alignments of the utterances
// in `features` (feature tensors are (frames, dims); alignments of other utterances are ignored).
std::vector<int32_t> check_alignment_length(const std::string& utt, int64_t num_frames,
                                            const std::vector<int32_t>& alignment, int64_t tolerance = 0);
std::map<std::string, std::vector<int32_t>> check_alignment_lengths(
    const std::map<std::string, Tensor>& features, const std::map<std::string, std::vector<int32_t>>& alignments,
    int64_t tolerance = 0);

// ---------------------------------------------------------------------------------------------
// Feature post-processing
// ---------------------------------------------------------------------------------------------

// Kaldi's add-deltas: (..., T, F) -> (..., T, F * (order + 1)), [feats, delta, delta-delta, ...].
// Order-i coefficients use the order-(i-1) regression filter convolved with
// [-window..window] / (2 * sum_{j=1..window} j^2), applied to the ORIGINAL features with frame
// indices clamped to [0, T-1]. Order 1 equals functional::compute_deltas(win_length = 2 * window
// + 1, "replicate"); order 2 does not at the first and last 2*window frames (applying
// compute_deltas twice replicates the first-order deltas at the edges, Kaldi the features), so
// the filters are built here. Float32 and float64 inputs; computed in the input dtype.
Tensor add_deltas(const Tensor& feats, int64_t order = 2, int64_t window = 2);

// Kaldi's CMVN statistics of (T, F) features, float64 (2, F + 1): row 0 = per-dim sums and the
// frame count in the last column, row 1 = per-dim sums of squares and 0. Stats of several
// utterances (one speaker) are the sum of their stats; compute_cmvn_stats(list) does that.
Tensor compute_cmvn_stats(const Tensor& feats);
Tensor compute_cmvn_stats(const std::vector<Tensor>& feats);
// Per-speaker stats: spk2utt maps speakers to utterances, features holds (T, F) per utterance.
// An utterance of spk2utt without features throws.
std::map<std::string, Tensor> compute_speaker_cmvn_stats(
    const std::map<std::string, Tensor>& features, const std::map<std::string, std::vector<std::string>>& spk2utt);

// Kaldi's apply-cmvn: x - mean, or (x - mean) / sqrt(var) with norm_vars (variance floored at
// 1e-20). Offsets and scales are computed in float64 and applied in the features' dtype, as
// Kaldi does (x * scale + offset). stats: (2, F + 1), or (1, F + 1) without norm_vars; a count
// below 1 throws.
Tensor apply_cmvn(const Tensor& feats, const Tensor& stats, bool norm_vars = false);

}  // namespace fw::audio::kaldi_io
