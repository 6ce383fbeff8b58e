//===- Options.h - heterps-run's command line -------------------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H
#define HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace heterps::run {

struct Options {
  std::string plan;
  // Data.
  std::string data, evalData, format;
  int64_t shuffle = 0;
  int64_t syntheticExamples = 1 << 16, syntheticVocab = 1000;
  int64_t csvLabelColumn = 0;
  bool csvHeader = false;
  // Training.
  int64_t epochs = 1, steps = 0, batch = 0;
  int threads = 1;
  uint64_t seed = 1;
  int64_t logEvery = 100;
  std::string save, load;
  int64_t checkpointEvery = 0;
  bool fallbackCPU = false;
  // The pipelined executor: auto | on | off, its schedule, the worker cap
  // (0: the hardware threads) and micro-batches per step (0: the plan's).
  std::string pipeline = "auto", schedule = "1f1b";
  // sync | async, and async's staleness bound in steps (-1: not given).
  std::string sync = "sync";
  int64_t maxStaleness = -1;
  int maxWorkers = 0;
  int64_t microBatches = 0;
  // Data lanes: shards of the data, each read by the workers of its
  // micro-batches (0: one per replica of the job's widest stage).
  int64_t dataLanes = 0;
  // Measured op times, written as a scheduler profile table.
  std::string profile, profileResource;
  // A Chrome / Perfetto trace of the training steps.
  std::string trace;
  std::string metricsFile;
  // Parameter server: the servers in shard order (empty: embedded), the
  // deadline of a call, and where to export the bounded tables.
  std::string ps;
  double psDeadline = 10;
  // TLS and the token of the PS servers' calls (files).
  std::string psTlsCA, psTlsCert, psTlsKey, psTlsServerName, psTokenFile;
  // How rows and gradients travel to the PS: f32 | f16 | bf16.
  std::string psWire = "f32";
  // off | exact | stale; empty: exact with --ps, off with the embedded PS.
  std::string psPullAhead;
  std::string exportTables;
  // Tables kept in RocksDB beyond a cache of rows, and the embedded
  // server's RocksDB directory.
  bool tablesOnDisk = false;
  int64_t tableCacheRows = 1 << 20;
  std::string rocksdbDir;
  // Feature admission, TTL and the non-finite policy of the tables.
  int64_t admitMinCount = 0;
  double ttlSeconds = 0;
  bool skipNonFinite = false;
  // Inference.
  bool infer = false;
  bool quiet = false, verbose = false;
  std::string outputDir;
  std::vector<std::pair<std::string, std::string>> inputs;
  /// --print-plan: "" (run the plan), "text" or "dot".
  std::string printPlan;
};

/// Parses argv; prints usage and exits on --help, prints the problem and
/// exits 2 on a bad option.
Options parseOptions(int argc, char **argv);

/// Whether --KEY is an option without a value (--csv-header, --infer, ...).
bool isFlagOption(const std::string &key);

} // namespace heterps::run

#endif // HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H
