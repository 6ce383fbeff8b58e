//===- FuzzMain.cpp - Replays fuzz inputs without libFuzzer -----*- C++ -*-===//
//
// The main() of a fuzz target in a build without libFuzzer (GCC, or clang
// without HETERPS_FUZZ): runs LLVMFuzzerTestOneInput on every file named on
// the command line and every regular file in the directories named, so the
// corpora kept in the repository are regression tests of every build. A
// crash is a crash of this process; the file being run is printed first.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" int LLVMFuzzerInitialize(int *argc, char ***argv)
    __attribute__((weak));

namespace fs = std::filesystem;

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    fs::path path = argv[i];
    if (path.string().rfind("-", 0) == 0)
      continue; // libFuzzer flags, so one command line serves both builds.
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry &e : fs::directory_iterator(path, ec))
        if (e.is_regular_file())
          files.push_back(e.path());
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(path, ec)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "%s: '%s' is neither a file nor a directory\n",
                   argv[0], argv[i]);
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
    return 2;
  }
  for (const fs::path &path : inputs) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read '%s'\n", argv[0],
                   path.string().c_str());
      return 2;
    }
    std::fprintf(stderr, "running %s (%zu bytes)\n", path.string().c_str(),
                 bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::fprintf(stderr, "%s: %zu inputs ran\n", argv[0], inputs.size());
  return 0;
}
