//===- IDXReader.cpp - IDX files of MNIST and Fashion-MNIST ---------------===//
//
// The images file and its labels file (the path with "images-idx3" replaced
// by "labels-idx1") are loaded whole: Fashion-MNIST's training set is 47 MB
// of pixels, and in memory the epochs after the first cost no decompression.
// Pixels stay bytes until a batch is cut.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>
#include <cstdio>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
struct IDXFile {
  std::vector<uint8_t> bytes;
  std::vector<int64_t> dims;
  size_t offset = 0;
};

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

/// Loads an IDX file of unsigned bytes with `minDims`..`maxDims` dimensions.
IDXFile loadIDX(const std::string &path, int64_t minDims, int64_t maxDims,
                const char *what) {
  IDXFile f;
  f.bytes = readWholeFile(path);
  const std::vector<uint8_t> &b = f.bytes;
  auto be32 = [&](size_t at) {
    return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 |
           uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
  };
  if (b.size() < 4)
    fail(path, ": idx: expected a 4-byte magic number, found a ", b.size(),
         "-byte file");
  uint32_t magic = be32(0);
  int64_t ndims = b[3];
  if (b[0] != 0 || b[1] != 0 || b[2] != 0x08 || ndims < minDims ||
      ndims > maxDims)
    fail(path, ": idx: expected the magic number of ", what, " (",
         hex32(0x0800 | minDims), ": unsigned bytes, ", minDims,
         " dimensions), found ", hex32(magic));
  f.offset = 4 + 4 * ndims;
  if (b.size() < f.offset)
    fail(path, ": idx: expected a ", f.offset, "-byte header, found a ",
         b.size(), "-byte file");
  uint64_t total = 1;
  for (int64_t i = 0; i < ndims; ++i) {
    f.dims.push_back(be32(4 + 4 * i));
    total *= f.dims.back();
  }
  if (b.size() - f.offset != total)
    fail(path, ": idx: expected ", total, " bytes of data (",
         shapeString(f.dims), "), found ", b.size() - f.offset);
  return f;
}

class IDXReader : public DataSource {
public:
  explicit IDXReader(const DataOptions &options) : options(options) {
    checkNoSparse(options, "idx");
    const std::string key = "images-idx3";
    size_t at = options.path.rfind(key);
    if (at == std::string::npos)
      fail("idx ", options.path,
           ": expected an images file whose name contains '", key,
           "' (its labels file has 'labels-idx1' there)");
    std::string labelsPath = options.path;
    labelsPath.replace(at, key.size(), "labels-idx1");

    images = loadIDX(options.path, 3, 3, "images");
    labels = loadIDX(labelsPath, 1, 1, "labels");
    count = images.dims[0];
    width = images.dims[1] * images.dims[2];
    if (labels.dims[0] != count)
      fail("idx ", labelsPath, ": expected ", count, " labels (the count of ",
           options.path, "), found ", labels.dims[0]);
    if (options.denseFeatures != 0 && options.denseFeatures != width)
      fail("idx ", options.path, ": the model expects ", options.denseFeatures,
           " dense features, the images have ", images.dims[1], "x",
           images.dims[2], " = ", width, " pixels");
    if (options.unitLabels)
      for (int64_t i = 0; i < count; ++i)
        if (labels.bytes[labels.offset + i] > 1)
          fail("idx ", labelsPath, ": label ",
               int(labels.bytes[labels.offset + i]), " of example ", i,
               " is not in [0, 1] (the plan's loss is bce)");
    if (options.classLabels)
      for (int64_t i = 0; i < count; ++i)
        if (labels.bytes[labels.offset + i] >= options.numClasses)
          fail("idx ", labelsPath, ": label ",
               int(labels.bytes[labels.offset + i]), " of example ", i,
               " is outside [0, numClasses=", options.numClasses, ")");
  }

  bool next(Batch &batch, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t n = std::min(batchSize, count - cursor);
    resizeLabel(batch, options, n);
    batch.dense.resize(DType::F32, {n, width});
    batch.sparse = Tensor();
    batch.size = n;
    const uint8_t *px = images.bytes.data() + images.offset + cursor * width;
    float *dense = batch.dense.as<float>();
    for (int64_t i = 0; i < n * width; ++i)
      dense[i] = px[i] / 255.0f;
    const uint8_t *lb = labels.bytes.data() + labels.offset + cursor;
    for (int64_t i = 0; i < n; ++i) {
      if (options.classLabels)
        batch.label.as<int64_t>()[i] = lb[i];
      else
        batch.label.as<float>()[i] = lb[i];
    }
    cursor += n;
    return n > 0;
  }

  void rewind() override { cursor = 0; }
  std::string describe() const override { return "idx " + options.path; }

private:
  DataOptions options;
  IDXFile images, labels;
  int64_t count = 0, width = 0, cursor = 0;
};
} // namespace

std::unique_ptr<DataSource> data::openIDX(const DataOptions &options) {
  return std::make_unique<IDXReader>(options);
}
