//===- Options.h - heterps-run's command line -------------------*- C++ -*-===//

#ifndef HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H
#define HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H

#include "heterps/PS/Flags.h"
#include "heterps/Support/Flags.h"

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
  bool seedGiven = false;
  int64_t logEvery = 100;
  std::string save, load;
  int64_t checkpointEvery = 0;
  bool fallbackCPU = false;
  std::string gpuMath = "f32";
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
  // The PS servers (empty: embedded) and how to reach them; the settings
  // of the tables; where to export the bounded tables.
  ps::ClientFlags psClient;
  ps::TableFlags tables;
  // off | exact | stale; empty: exact with --ps, off with the embedded PS.
  std::string psPullAhead;
  std::string exportTables;
  // The embedded server's RocksDB directory.
  std::string rocksdbDir;
  // Inference.
  bool infer = false;
  bool quiet = false, verbose = false;
  std::string outputDir;
  /// --input NAME=FILE.pb, in order.
  std::vector<std::pair<std::string, std::string>> inputs;
  /// --print-plan: "" (run the plan), "text" or "dot".
  std::string printPlan;
};

/// Declares heterps-run PLAN's options on `flags`, writing into `o`
/// (heterps-run launch declares them too, to check and forward them).
void declareOptions(Flags &flags, Options &o);

/// The checks across options after parsing; a problem is a usage error
/// through `flags`.
void checkOptions(const Flags &flags, Options &o);

/// Parses argv; prints usage and exits on --help, prints the problem and
/// exits 2 on a bad option.
Options parseOptions(int argc, char **argv);

} // namespace heterps::run

#endif // HETERPS_TOOLS_HETERPS_RUN_OPTIONS_H
