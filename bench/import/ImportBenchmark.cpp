//===- ImportBenchmark.cpp - ONNX import against a bare protobuf parse ----===//
//
// For every ONNX file on the command line, in one process, times
//   - read:   reading the model file and its external data files into memory,
//   - parse:  onnx::ModelProto::ParseFromString of the model file alone, the
//             bound no importer can beat (it neither checks, reads external
//             data nor builds IR),
//   - import: mlir::heterps::importONNXFile, i.e. parse, ONNX checker,
//             external data, conversion to the HeterPS dialect and
//             verification,
// each repeated --repeat times, and prints the medians, the import's MB/s
// over the model's bytes (with external data), import / parse and
// import / (read + parse); with external data the parse covers only the small
// model file, so the second ratio is the one to compare. The peak resident
// set is the process's, so it covers the largest model so far.
//
//   heterps-bench-import [--repeat=N] model.onnx...
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Support/Flags.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <onnx/onnx_pb.h>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace {

// Timed runs per file (--repeat); the median is reported.
uint32_t repeat = 5;

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Reads a whole file into memory with fread. Not llvm::MemoryBuffer: it
/// maps large files (even when asked for a volatile, read file), which would
/// defer the reading to the first page faults, outside the timed section.
std::optional<std::string> readFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  uint64_t size = 0;
  if (!f || llvm::sys::fs::file_size(path, size)) {
    llvm::errs() << "cannot read '" << path << "'\n";
    if (f)
      std::fclose(f);
    return std::nullopt;
  }
  std::string bytes(size, '\0');
  size_t got = std::fread(bytes.data(), 1, size, f);
  std::fclose(f);
  if (got != size) {
    llvm::errs() << "short read of '" << path << "'\n";
    return std::nullopt;
  }
  return bytes;
}

/// The distinct external data files the model's initializers name, relative
/// to the model's directory.
std::vector<std::string> externalFiles(const onnx::ModelProto &model,
                                       llvm::StringRef modelPath) {
  llvm::SmallString<256> dir(modelPath);
  llvm::sys::path::remove_filename(dir);
  llvm::StringSet<> seen;
  std::vector<std::string> files;
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    for (const onnx::StringStringEntryProto &e : t.external_data()) {
      if (e.key() != "location" || !seen.insert(e.value()).second)
        continue;
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, e.value());
      files.push_back(std::string(path));
    }
  }
  return files;
}

long peakRSSMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024; // Linux reports KiB.
}

struct Result {
  std::string name;
  double megabytes = 0;
  double read = 0, parse = 0, import = 0;
  size_t ops = 0;
  long peakMiB = 0;
};

bool benchmark(const std::string &path, Result &r) {
  r.name = llvm::sys::path::filename(path).str();
  // An untimed first pass finds the external data files (and warms the page
  // cache, so that every timed read sees the same state).
  std::vector<std::string> external;
  uint64_t totalBytes = 0;
  {
    std::optional<std::string> bytes = readFile(path);
    if (!bytes)
      return false;
    onnx::ModelProto model;
    if (!model.ParseFromString(*bytes)) {
      llvm::errs() << path << ": the protobuf does not parse\n";
      return false;
    }
    external = externalFiles(model, path);
    totalBytes = bytes->size();
    for (const std::string &file : external) {
      uint64_t size = 0;
      if (llvm::sys::fs::file_size(file, size)) {
        llvm::errs() << "cannot stat '" << file << "'\n";
        return false;
      }
      totalBytes += size;
    }
  }

  std::vector<double> reads, parses, imports;
  for (unsigned i = 0; i < repeat; ++i) {
    Clock::time_point start = Clock::now();
    std::optional<std::string> bytes = readFile(path);
    if (!bytes)
      return false;
    for (const std::string &file : external)
      if (!readFile(file))
        return false;
    reads.push_back(secondsSince(start));

    onnx::ModelProto model;
    start = Clock::now();
    bool parsed = model.ParseFromString(*bytes);
    parses.push_back(secondsSince(start));
    if (!parsed)
      return false;
  }

  for (unsigned i = 0; i < repeat; ++i) {
    // A fresh context per run so that no run finds the attributes (the
    // weights) of an earlier one already uniqued; creating and destroying
    // it is not timed.
    mlir::MLIRContext context;
    context
        .loadDialect<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
    Clock::time_point start = Clock::now();
    auto module = mlir::heterps::importONNXFile(path, &context);
    imports.push_back(secondsSince(start));
    if (failed(module))
      return false;
    if (i == 0) {
      r.ops = 0;
      (**module)->walk([&](mlir::Operation *) { ++r.ops; });
    }
  }
  r.megabytes = totalBytes / 1e6;
  r.read = median(reads);
  r.parse = median(parses);
  r.import = median(imports);
  r.peakMiB = peakRSSMiB();
  return true;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> inputFiles;
  heterps::Flags flags(
      "heterps-bench-import",
      "usage: heterps-bench-import [--repeat=N] MODEL.onnx...\n\n"
      "Times importing ONNX models against a protobuf parse of the "
      "same files.\n");
  flags.positionals("model", inputFiles);
  flags.option("--repeat", repeat, "N", "timed runs per file (default 5)", 1,
               1000);
  flags.parse(argc, argv);
  if (inputFiles.empty())
    flags.fail("no model given");

  std::vector<Result> results;
  for (const std::string &path : inputFiles) {
    Result r;
    if (!benchmark(path, r)) {
      llvm::errs() << path << ": benchmark failed\n";
      return 1;
    }
    results.push_back(r);
  }

  llvm::outs() << llvm::formatv(
      "{0,-18} {1,8} {2,8} {3,8} {4,9} {5,11} {6,12} {7,19} {8,6} {9,8}\n",
      "model", "MB", "read s", "parse s", "import s", "import MB/s",
      "import/parse", "import/(read+parse)", "ops", "peak MiB");
  for (const Result &r : results)
    llvm::outs() << llvm::formatv(
        "{0,-18} {1,8:f1} {2,8:f4} {3,8:f4} {4,9:f4} {5,11:f1} {6,12:f1} "
        "{7,19:f1} {8,6} {9,8}\n",
        r.name, r.megabytes, r.read, r.parse, r.import, r.megabytes / r.import,
        r.import / r.parse, r.import / (r.read + r.parse), r.ops, r.peakMiB);
  llvm::outs() << "medians of " << repeat << " runs; MB counts external data; "
               << "peak MiB is the process's peak so far\n";
  return 0;
}
