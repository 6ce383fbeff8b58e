//===- FileListSource.cpp - Several data files read as one ----------------===//
//
// `--data=day_0.gz,day_1.gz` or `--data='day_*.gz'`: the files are read one
// after another, in the order given (a pattern's matches sorted by name),
// each by its own reader, so that an error names the file and line it is
// in and each CSV file may have its header.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

#include <algorithm>
#include <glob.h>

using namespace heterps::runtime;
using namespace heterps::runtime::data;

std::vector<std::string>
heterps::runtime::expandDataPaths(const std::string &spec) {
  std::vector<std::string> paths;
  size_t begin = 0;
  while (begin <= spec.size()) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos)
      end = spec.size();
    std::string part = spec.substr(begin, end - begin);
    begin = end + 1;
    if (part.empty())
      fail("data '", spec, "' has an empty entry");
    if (part.find_first_of("*?[") == std::string::npos) {
      paths.push_back(part);
      continue;
    }
    glob_t matches{};
    int status = glob(part.c_str(), 0, nullptr, &matches);
    if (status == GLOB_NOMATCH || (status == 0 && matches.gl_pathc == 0)) {
      globfree(&matches);
      fail("data pattern '", part, "' matches no file");
    }
    if (status != 0) {
      globfree(&matches);
      fail("data pattern '", part, "' cannot be read");
    }
    // glob sorts its matches.
    for (size_t i = 0; i < matches.gl_pathc; ++i)
      paths.push_back(matches.gl_pathv[i]);
    globfree(&matches);
  }
  return paths;
}

namespace {
class FileListSource : public DataSource {
public:
  FileListSource(std::vector<std::unique_ptr<DataSource>> files,
                 std::string description)
      : files(std::move(files)), description(std::move(description)) {}

  bool next(Batch &batch, int64_t batchSize) override {
    if (batchSize <= 0)
      fail(describe(), ": batch size must be positive, got ", batchSize);
    int64_t n = 0;
    while (n < batchSize && current < files.size()) {
      if (!files[current]->next(part, batchSize - n)) {
        ++current;
        continue;
      }
      if (n == 0)
        shapeLike(batch, part, part.size);
      growRows(batch, n, n + part.size, batchSize);
      copyRows(part, 0, batch, n, part.size);
      n += part.size;
    }
    if (n == 0) {
      setRows(batch, 0);
      return false;
    }
    setRows(batch, n);
    return true;
  }

  void rewind() override {
    for (auto &file : files)
      file->rewind();
    current = 0;
  }

  std::string describe() const override { return description; }

private:
  std::vector<std::unique_ptr<DataSource>> files;
  std::string description;
  size_t current = 0;
  Batch part;
};
} // namespace

std::unique_ptr<DataSource>
data::openFileList(std::vector<std::unique_ptr<DataSource>> files,
                   std::string description) {
  return std::make_unique<FileListSource>(std::move(files),
                                          std::move(description));
}
