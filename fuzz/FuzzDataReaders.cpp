//===- FuzzDataReaders.cpp - The training data readers ----------*- C++ -*-===//
//
// Byte 0 picks the format (criteo, libsvm, csv, idx, a TensorProto file),
// byte 1 the feature counts and options, byte 2 the batch size; the rest
// is the file (for idx: a 4-byte length, the images file, then the labels
// file). Every batch is read; a reader either delivers batches of the
// promised shape or throws a RuntimeError.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Error.h"

using namespace heterps;
using namespace heterps::runtime;

namespace {

void check(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "reader broke its contract: %s\n", what);
    std::abort();
  }
}

void readAll(const DataOptions &options, int64_t batchSize) {
  std::unique_ptr<DataSource> source = openDataSource(options);
  Batch batch;
  // Two epochs: rewinding must give the same stream again.
  for (int epoch = 0; epoch < 2; ++epoch) {
    int64_t batches = 0;
    while (source->next(batch, batchSize) && ++batches < 100000) {
      check(batch.size > 0 && batch.size <= batchSize, "batch size");
      check(batch.label.shape().size() >= 1 &&
                batch.label.shape()[0] == batch.size,
            "label rows");
      if (options.denseFeatures)
        check(batch.dense.shape() == Shape{batch.size, options.denseFeatures},
              "dense shape");
      if (options.sparseFeatures)
        check(batch.sparse.shape() == Shape{batch.size, options.sparseFeatures},
              "sparse shape");
    }
    source->rewind();
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::InputReader in(data, size);
  uint8_t format = in.byte() % 5;
  uint8_t shape = in.byte();
  int64_t batchSize = 1 + in.byte() % 16;
  const std::string &dir = fuzz::scratchDir();
  DataOptions options;
  options.prefetch = (shape & 0x80) != 0;
  options.seed = 1;
  try {
    switch (format) {
    case 0: // criteo: 13 dense and 26 sparse features, or fewer
      options.format = "criteo";
      options.denseFeatures = shape & 1 ? 13 : shape % 14;
      options.sparseFeatures = shape & 2 ? 26 : shape % 27;
      break;
    case 1:
      options.format = "libsvm";
      options.denseFeatures = 1 + shape % 32;
      options.classLabels = shape & 0x40;
      options.numClasses = 2 + shape % 9;
      break;
    case 2:
      options.format = "csv";
      options.denseFeatures = 1 + shape % 8;
      options.labelColumn = shape % 3;
      options.csvHeader = shape & 0x40;
      break;
    case 3: {
      options.format = "idx";
      options.denseFeatures = 1 + (shape & 0x3f);
      options.classLabels = true;
      options.numClasses = 10;
      uint32_t imagesBytes = in.u32();
      std::string images = in.bytes(imagesBytes);
      std::string labels = in.rest();
      fuzz::writeFile(dir + "/data-images-idx3-ubyte", images.data(),
                      images.size());
      fuzz::writeFile(dir + "/data-labels-idx1-ubyte", labels.data(),
                      labels.size());
      options.path = dir + "/data-images-idx3-ubyte";
      readAll(options, batchSize);
      if (fuzz::verbose())
        std::fprintf(stderr, "read\n");
      return 0;
    }
    default: {
      std::string bytes = in.rest();
      fuzz::writeFile(dir + "/tensor.pb", bytes.data(), bytes.size());
      std::string name;
      Tensor t = readTensorProto(dir + "/tensor.pb", &name);
      check(t.numElements() >= 0, "tensor size");
      if (fuzz::verbose())
        std::fprintf(stderr, "read %s\n", t.typeString().c_str());
      return 0;
    }
    }
    std::string bytes = in.rest();
    std::string path = dir + (shape & 0x20 ? "/data.gz" : "/data.txt");
    fuzz::writeFile(path, bytes.data(), bytes.size());
    options.path = path;
    readAll(options, batchSize);
    if (fuzz::verbose())
      std::fprintf(stderr, "read\n");
  } catch (const RuntimeError &e) {
    // A clear error: what bad input should get.
    if (fuzz::verbose())
      std::fprintf(stderr, "refused: %s\n", e.what());
  }
  return 0;
}
