//===- Data.h - Training data readers ---------------------------*- C++ -*-===//
//
// Readers turn files (Criteo TSV, libsvm, CSV, IDX as used by MNIST and
// Fashion-MNIST) or a synthetic generator into batches of named columns. The
// executor binds the columns to the plan's inputs: `dense` to the float
// input, `sparse` to the integer id inputs (split by their widths), `label`
// to the label input.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_DATA_H
#define HETERPS_RUNTIME_DATA_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace heterps::runtime {

/// One batch of examples. `size` rows are valid; the tensors have exactly
/// `size` rows (a reader resizes them; their buffers are reused).
struct Batch {
  int64_t size = 0;
  /// f32 [size, 1] for binary or regression labels, i64 [size] for class
  /// labels (DataOptions::classLabels).
  Tensor label;
  /// f32 [size, denseFeatures]; absent (empty) when denseFeatures is 0.
  Tensor dense;
  /// i64 [size, sparseFeatures]; absent (empty) when sparseFeatures is 0.
  Tensor sparse;
  /// Which rows hold examples read by this process (empty: all): a job's
  /// processes read only their data lanes, the other rows are zeros.
  std::vector<char> present;
};

struct DataOptions {
  /// criteo, libsvm, csv, idx or synthetic.
  std::string format = "synthetic";
  /// The file (criteo, libsvm, csv), or for idx the images file (the labels
  /// file is found by replacing "images-idx3" with "labels-idx1"). For the
  /// text formats, a comma-separated list of files and glob patterns
  /// ("day_*.gz"), read one after another (a pattern's matches by name).
  std::string path;
  /// Read only shard `shardIndex` of `shardCount`: with at least as many
  /// files as shards, file i belongs to shard i mod shardCount; otherwise
  /// example r of the whole stream belongs to shard r mod shardCount. A
  /// shard's shuffle is seeded with seed + shardIndex.
  int64_t shardIndex = 0, shardCount = 1;
  /// Feature counts the model expects; readers check them against the file.
  int64_t denseFeatures = 0;
  int64_t sparseFeatures = 0;
  /// Labels are class indices (i64 [B]) instead of f32 [B, 1].
  bool classLabels = false;
  /// f32 labels are probabilities in [0, 1] (the bce loss); readers refuse
  /// others naming the file and line.
  bool unitLabels = false;
  /// csv: the column holding the label (others are dense features), and
  /// whether the first line is a header.
  int64_t labelColumn = 0;
  bool csvHeader = false;
  /// synthetic: examples per epoch, the id range of every sparse feature,
  /// and the number of classes for class labels.
  int64_t syntheticExamples = 1 << 16;
  int64_t syntheticVocab = 1000;
  int64_t numClasses = 2;
  /// Shuffle buffer in examples (0: read in file order), and the seed of the
  /// shuffle and of the synthetic generator.
  int64_t shuffleBuffer = 0;
  uint64_t seed = 1;
  /// Read in a background thread.
  bool prefetch = true;
};

class DataSource {
public:
  virtual ~DataSource();
  /// Fills `batch` with up to `batchSize` examples of the current epoch;
  /// returns false (and batch.size == 0) when the epoch is exhausted. A
  /// malformed record throws RuntimeError naming the file and line.
  virtual bool next(Batch &batch, int64_t batchSize) = 0;
  /// Starts the next epoch from the beginning.
  virtual void rewind() = 0;
  /// What is being read, for the progress line ("criteo train.tsv").
  virtual std::string describe() const = 0;
};

/// The format a data path's name implies: criteo (.tsv, .txt), libsvm
/// (.svm, .libsvm), csv, idx (*idx3-ubyte), each also gzipped; synthetic for
/// no path or "synthetic"; "" when the name does not tell. A list of files has
/// the format of its first.
std::string dataFormatOf(const std::string &path);

/// Opens the reader for `options.format`; wraps it in a background reader
/// with a shuffle buffer as the options ask.
std::unique_ptr<DataSource> openDataSource(const DataOptions &options);

/// How a step's batch is assembled from lanes of the data: `lanes` shards
/// (DataOptions::shardIndex), micro-batch m of a step (split as
/// MicroBatches.h splits it, `microBatches` asked for) being the next rows
/// of lane m mod lanes. A process of a job reads only the lanes its worker
/// uses (`read`, one flag per lane).
struct LaneLayout {
  int64_t lanes = 1;
  int64_t microBatches = 1;
  std::vector<bool> read;
  /// Given whether this process has a whole step in every lane it reads,
  /// whether every process of the job has (a collective); unset: this
  /// process alone decides.
  std::function<bool(bool)> allHaveData;
};

/// Opens a source per lane read (shard l of `layout.lanes`) and joins them
/// into the steps' batches. A step
/// ends the epoch when any lane of any process has fewer rows than its
/// share: the lanes stay in step.
std::unique_ptr<DataSource> openLaneSource(const DataOptions &options,
                                           LaneLayout layout);

/// The files a data path names: its comma-separated entries, each glob
/// pattern replaced by its matches sorted by name. Throws naming a pattern
/// that matches nothing.
std::vector<std::string> expandDataPaths(const std::string &spec);

/// The sparse ids of the criteo reader: categorical column `column` (0 for C1
/// to 25 for C26) with the hash `value` (its 8 hex digits), and the column
/// left empty. Both are splitmix64 of a 64-bit key masked to 63 bits: the key
/// is (column << 32 | value), or (0xffffffff << 32 | column) when missing, so
/// present and missing keys never coincide. Serving code uses these to map
/// raw Criteo records to the ids the model was trained on.
int64_t criteoCategoricalId(int64_t column, uint32_t value);
int64_t criteoMissingId(int64_t column);

/// Reads one ONNX TensorProto file (raw_data or the typed repeated fields);
/// sets `*name` to the tensor's name when it is not null.
Tensor readTensorProto(const std::string &path, std::string *name = nullptr);
/// Writes `tensor` as an ONNX TensorProto with raw_data.
void writeTensorProto(const std::string &path, const std::string &name,
                      const Tensor &tensor);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_DATA_H
