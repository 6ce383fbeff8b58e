//===- BatchRows.cpp - Shaping batches and copying rows between them ------===//

#include "Readers.h"

#include <algorithm>
#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

void data::checkNoSparse(const DataOptions &options, const char *format) {
  if (options.sparseFeatures != 0)
    fail(format, " ", options.path, ": the model expects ",
         options.sparseFeatures, " sparse features, the format has none");
}

void data::resizeLabel(Batch &batch, const DataOptions &options, int64_t rows) {
  if (options.classLabels)
    batch.label.resize(DType::I64, {rows});
  else
    batch.label.resize(DType::F32, {rows, 1});
}

static void setTensorRows(Tensor &t, int64_t rows) {
  if (t.empty())
    return;
  Shape shape = t.shape();
  shape[0] = rows;
  t.resize(t.dtype(), std::move(shape));
}

void data::setRows(Batch &batch, int64_t rows) {
  setTensorRows(batch.label, rows);
  setTensorRows(batch.dense, rows);
  setTensorRows(batch.sparse, rows);
  batch.size = rows;
}

static void shapeTensorLike(Tensor &dst, const Tensor &src, int64_t rows) {
  if (src.empty()) {
    dst = Tensor();
    return;
  }
  Shape shape = src.shape();
  shape[0] = rows;
  dst.resize(src.dtype(), std::move(shape));
}

void data::shapeLike(Batch &dst, const Batch &src, int64_t rows) {
  shapeTensorLike(dst.label, src.label, rows);
  shapeTensorLike(dst.dense, src.dense, rows);
  shapeTensorLike(dst.sparse, src.sparse, rows);
  dst.size = rows;
}

static size_t rowBytes(const Tensor &t) {
  size_t bytes = dtypeSize(t.dtype());
  for (int64_t i = 1; i < t.rank(); ++i)
    bytes *= t.dim(i);
  return bytes;
}

static void growTensorRows(Tensor &t, int64_t kept, int64_t rows) {
  if (t.empty())
    return;
  Shape shape = t.shape();
  shape[0] = rows;
  // Within its buffer a tensor keeps its bytes; beyond, it is allocated
  // anew, and the rows kept are copied over.
  if (rows * rowBytes(t) <= t.capacityBytes()) {
    t.resize(t.dtype(), std::move(shape));
    return;
  }
  Tensor grown(t.dtype(), std::move(shape));
  std::memcpy(grown.data(), t.data(), kept * rowBytes(t));
  t = std::move(grown);
}

void data::growRows(Batch &batch, int64_t kept, int64_t rows, int64_t most) {
  if (rows <= batch.size)
    return;
  rows = std::min(most, std::max(rows, 2 * kept));
  growTensorRows(batch.label, kept, rows);
  growTensorRows(batch.dense, kept, rows);
  growTensorRows(batch.sparse, kept, rows);
  batch.size = rows;
}

static void copyTensorRows(const Tensor &src, int64_t srcRow, Tensor &dst,
                           int64_t dstRow, int64_t count) {
  if (src.empty())
    return;
  size_t bytes = rowBytes(src);
  std::memcpy(static_cast<char *>(dst.data()) + dstRow * bytes,
              static_cast<const char *>(src.data()) + srcRow * bytes,
              count * bytes);
}

void data::copyRows(const Batch &src, int64_t srcRow, Batch &dst,
                    int64_t dstRow, int64_t count) {
  copyTensorRows(src.label, srcRow, dst.label, dstRow, count);
  copyTensorRows(src.dense, srcRow, dst.dense, dstRow, count);
  copyTensorRows(src.sparse, srcRow, dst.sparse, dstRow, count);
}
