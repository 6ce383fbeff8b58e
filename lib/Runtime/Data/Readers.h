//===- Readers.h - Internals of the training data readers -------*- C++ -*-===//
//
// Shared pieces of the readers in this directory: the factory of each format,
// a buffered line reader, number parsing and row copies between batches.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_DATA_READERS_H
#define HETERPS_LIB_RUNTIME_DATA_READERS_H

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Hash.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct gzFile_s;

namespace heterps::runtime::data {

/// The batch size the wrappers read their inner source in; the requested
/// batch size is cut from these.
constexpr int64_t kNaturalBatch = 1024;

std::unique_ptr<DataSource> openCriteo(const DataOptions &options);
std::unique_ptr<DataSource> openLibSVM(const DataOptions &options);
std::unique_ptr<DataSource> openCSV(const DataOptions &options);
std::unique_ptr<DataSource> openIDX(const DataOptions &options);
std::unique_ptr<DataSource> openSynthetic(const DataOptions &options);
std::unique_ptr<DataSource> wrapShuffle(std::unique_ptr<DataSource> inner,
                                        int64_t bufferExamples, uint64_t seed);
std::unique_ptr<DataSource> wrapPrefetch(std::unique_ptr<DataSource> inner);
/// Keeps example r of `inner` when r mod count == index.
std::unique_ptr<DataSource> wrapShard(std::unique_ptr<DataSource> inner,
                                      int64_t index, int64_t count);
/// Reads `files` one after another.
std::unique_ptr<DataSource>
openFileList(std::vector<std::unique_ptr<DataSource>> files,
             std::string description);

/// Reads a text file line by line through zlib, so gzip-compressed files
/// (Criteo's day_N.gz) read like plain ones.
class LineReader {
public:
  explicit LineReader(std::string path);
  ~LineReader();
  LineReader(const LineReader &) = delete;
  LineReader &operator=(const LineReader &) = delete;

  /// The next line without its "\n" or "\r\n"; valid until the next call.
  bool next(std::string_view &line);
  /// 1-based number of the line last returned.
  int64_t lineNumber() const { return line; }
  void rewind();
  const std::string &path() const { return filePath; }

private:
  bool refill();

  std::string filePath;
  gzFile_s *file = nullptr;
  std::vector<char> buffer;
  size_t pos = 0, end = 0;
  bool atEof = false;
  // A line that spans two buffer fills is assembled here.
  std::string carry;
  bool carryReturned = false;
  int64_t line = 0;
};

/// The whole (possibly gzip-compressed) file.
std::vector<uint8_t> readWholeFile(const std::string &path);

std::string_view trim(std::string_view s);
/// `s` quoted for an error message, shortened when long.
std::string quote(std::string_view s);
/// Whole-token parses (a leading '+' is accepted); false on anything else.
bool parseInt64(std::string_view s, int64_t &value);
/// Also false for NaN, infinities and magnitudes beyond f32's (the data
/// are stored as f32): a NaN in the data trains on to NaN weights.
bool parseDouble(std::string_view s, double &value);

using runtime::splitmix64;

/// A small, fast generator (splitmix64 as a stream) for the synthetic data
/// and the shuffle buffer; deterministic across platforms, unlike the
/// distributions of <random>.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t x = state;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return (next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n); the modulo bias is negligible for n << 2^64.
  uint64_t below(uint64_t n) { return next() % n; }

private:
  uint64_t state;
};

/// Label and feature checks shared by the readers.
void checkNoSparse(const DataOptions &options, const char *format);
void resizeLabel(Batch &batch, const DataOptions &options, int64_t rows);

/// Gives `batch` exactly `rows` rows; the tensors keep their row shapes and
/// their buffers (the first rows' contents survive a shrink).
void setRows(Batch &batch, int64_t rows);
/// Gives `dst` the dtypes and row shapes of `src` with `rows` rows.
void shapeLike(Batch &dst, const Batch &src, int64_t rows);
/// Gives `batch` room for `rows` rows, keeping its row shapes and its first
/// `kept` rows; it grows to at least twice `kept`, but to no more than
/// `most` rows. Readers assembling a batch grow it as its examples arrive,
/// so a batch size beyond the data allocates only for the data's examples.
void growRows(Batch &batch, int64_t kept, int64_t rows, int64_t most);
/// Copies `count` rows of every column of `src` (from `srcRow`) into `dst`
/// (at `dstRow`); the batches must have the same column types.
void copyRows(const Batch &src, int64_t srcRow, Batch &dst, int64_t dstRow,
              int64_t count = 1);

/// A reader of one example per line; subclasses parse a line into a row.
class TextSource : public DataSource {
public:
  TextSource(const DataOptions &options, std::string format);
  bool next(Batch &batch, int64_t batchSize) override;
  void rewind() override { lines.rewind(); }
  std::string describe() const override;

protected:
  /// Shapes `batch` for `rows` rows.
  virtual void resizeBatch(Batch &batch, int64_t rows) = 0;
  /// Fills row `row` of `batch` from `line`; throws on a malformed line.
  virtual void parseLine(std::string_view line, Batch &batch, int64_t row) = 0;
  /// "path:line: " for error messages.
  std::string where() const;
  /// Stores a label given as text, checking it against classLabels.
  void storeLabel(Batch &batch, int64_t row, std::string_view text,
                  bool minusOneIsZero);

  DataOptions options;
  std::string format;
  LineReader lines;
};

} // namespace heterps::runtime::data

#endif // HETERPS_LIB_RUNTIME_DATA_READERS_H
