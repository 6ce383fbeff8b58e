//===- DataSource.cpp - Opening a data source -----------------------------===//

#include "Readers.h"

#include <cstring>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

DataSource::~DataSource() = default;

std::string heterps::runtime::dataFormatOf(const std::string &path) {
  if (path.empty() || path == "synthetic")
    return "synthetic";
  // A list of files has the format of its first.
  if (size_t comma = path.find(','); comma != std::string::npos)
    return dataFormatOf(path.substr(0, comma));
  auto endsWith = [](const std::string &s, const char *suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
  };
  std::string p =
      endsWith(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  if (endsWith(p, ".tsv") || endsWith(p, ".txt"))
    return "criteo";
  if (endsWith(p, ".svm") || endsWith(p, ".libsvm"))
    return "libsvm";
  if (endsWith(p, ".csv"))
    return "csv";
  if (endsWith(p, "idx3-ubyte"))
    return "idx";
  return "";
}

/// The reader of one file (or of the synthetic stream).
static std::unique_ptr<DataSource> openReader(const DataOptions &options) {
  if (options.format == "criteo")
    return openCriteo(options);
  if (options.format == "libsvm")
    return openLibSVM(options);
  if (options.format == "csv")
    return openCSV(options);
  if (options.format == "idx")
    return openIDX(options);
  if (options.format == "synthetic")
    return openSynthetic(options);
  fail("unknown data format '", options.format,
       "' (expected criteo, libsvm, csv, idx or synthetic)");
}

std::unique_ptr<DataSource>
heterps::runtime::openDataSource(const DataOptions &options) {
  int64_t index = options.shardIndex, count = options.shardCount;
  if (count < 1 || index < 0 || index >= count)
    fail("data shard ", index, " of ", count, " does not exist");
  std::unique_ptr<DataSource> source;
  // Shards of whole files when there are enough files, else of examples.
  bool byExample = count > 1;
  if (options.format != "criteo" && options.format != "libsvm" &&
      options.format != "csv" && options.format != "idx" &&
      options.format != "synthetic")
    fail("unknown data format '", options.format,
         "' (expected criteo, libsvm, csv, idx or synthetic)");
  if (options.format != "synthetic" && options.path.empty())
    fail(options.format, " data needs a file");
  if (options.format == "synthetic") {
    source = openReader(options);
  } else {
    std::vector<std::string> paths = expandDataPaths(options.path);
    if (options.format == "idx" && paths.size() != 1)
      fail("idx data is one images file; '", options.path, "' names ",
           paths.size());
    std::vector<std::string> mine;
    if (count > 1 && paths.size() >= static_cast<size_t>(count)) {
      for (size_t i = index; i < paths.size(); i += count)
        mine.push_back(paths[i]);
      byExample = false;
    } else {
      mine = paths;
    }
    if (mine.size() == 1 && paths.size() == 1) {
      // A pattern that matches one file reads that file.
      DataOptions one = options;
      one.path = paths[0];
      source = openReader(one);
    } else {
      std::vector<std::unique_ptr<DataSource>> files;
      for (const std::string &path : mine) {
        DataOptions one = options;
        one.path = path;
        files.push_back(openReader(one));
      }
      std::string description = options.format + " " + options.path + " (" +
                                std::to_string(mine.size()) + " file" +
                                (mine.size() == 1 ? "" : "s");
      if (mine.size() != paths.size())
        description += " of " + std::to_string(paths.size()) + ": files " +
                       std::to_string(index) + " mod " + std::to_string(count);
      source = openFileList(std::move(files), description + ")");
    }
  }
  if (byExample)
    source = wrapShard(std::move(source), index, count);
  if (options.shuffleBuffer < 0)
    fail(source->describe(), ": shuffle buffer must be >= 0, got ",
         options.shuffleBuffer);
  // The shuffle runs inside the background thread, so it costs the training
  // loop nothing. Each shard shuffles in its own order.
  if (options.shuffleBuffer > 0)
    source = wrapShuffle(std::move(source), options.shuffleBuffer,
                         options.seed + static_cast<uint64_t>(index));
  if (options.prefetch)
    source = wrapPrefetch(std::move(source));
  return source;
}
