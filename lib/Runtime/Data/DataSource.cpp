//===- DataSource.cpp - Opening a data source -----------------------------===//

#include "Readers.h"

using namespace heterps::runtime;
using namespace heterps::runtime::data;

DataSource::~DataSource() = default;

std::unique_ptr<DataSource>
heterps::runtime::openDataSource(const DataOptions &options) {
  std::unique_ptr<DataSource> source;
  if (options.format == "criteo")
    source = openCriteo(options);
  else if (options.format == "libsvm")
    source = openLibSVM(options);
  else if (options.format == "csv")
    source = openCSV(options);
  else if (options.format == "idx")
    source = openIDX(options);
  else if (options.format == "synthetic")
    source = openSynthetic(options);
  else
    fail() << "unknown data format '" << options.format
           << "' (expected criteo, libsvm, csv, idx or synthetic)";
  if (options.shuffleBuffer < 0)
    fail() << source->describe() << ": shuffle buffer must be >= 0, got "
           << options.shuffleBuffer;
  // The shuffle runs inside the background thread, so it costs the training
  // loop nothing.
  if (options.shuffleBuffer > 0)
    source =
        wrapShuffle(std::move(source), options.shuffleBuffer, options.seed);
  if (options.prefetch)
    source = wrapPrefetch(std::move(source));
  return source;
}
