//===- Session.h - A plan ready to train in this process --------*- C++ -*-===//
//
// Everything a front end assembles before the first step of a plan: the
// dense parameters, the tables in a parameter-server service (the servers
// given by address, or one embedded in this process), the Program, and the
// pipelined executor when the plan asks for one. heterps-run and the Python
// package are front ends of a Session; checkpoints written by one load in
// the other.
//
// Like the rest of the runtime it does not include MLIR: it reads plans.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_SESSION_H
#define HETERPS_RUNTIME_SESSION_H

#include "heterps/PS/Client.h"
#include "heterps/PS/ExpirySweeper.h"
#include "heterps/PS/Shard.h"
#include "heterps/Runtime/Checkpoint.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/Pipeline.h"
#include "heterps/Runtime/Program.h"

#include <memory>
#include <string>

namespace heterps::runtime {

struct SessionOptions {
  /// The PS servers, "host:port,host:port"; empty: one embedded in this
  /// process.
  std::string ps;
  /// How the client reaches them (deadline, TLS, tokens, wire format).
  ps::ClientOptions client;
  /// The embedded server's RocksDB directory (tables on disk).
  std::string rocksdbDir;
  /// What every table is created with (storage, admission, TTL, ...).
  ps::v1::TableConfig tableDefaults;
  ProgramOptions program;
  /// "auto" (the pipelined executor when the plan has several stages or
  /// replicas), "on" or "off".
  std::string pipeline = "auto";
  PipelineOptions pipelineOptions;
};

class Session {
public:
  /// Creates the parameters and the tables (in a job of several processes,
  /// `options.pipelineOptions.processes`, every process's, then a barrier);
  /// throws RuntimeError naming the problem (an unreachable server, a table
  /// that exists with another shape, an unknown pipeline mode).
  Session(plan::Plan plan, SessionOptions options);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  const plan::Plan &plan() const { return thePlan; }
  Program &program() { return *theProgram; }
  ParamStore &params() { return theParams; }
  ps::Client &tables() { return *theTables; }
  /// What runs training steps: the pipelined executor (started by the
  /// first call, so that a checkpoint loaded before it is what its replicas
  /// start from) or the program. ProgramOptions::pullAhead applies to the
  /// program's own steps; the pipelined executor does not pull ahead.
  StepExecutor &stepper();
  /// Whether training steps run on the pipelined executor: a training plan
  /// with the pipeline on, or "auto" and several stages or replicas, or
  /// asynchronous updates, or several processes.
  bool isPipelined() const { return pipelined; }
  /// The pipelined executor once stepper() started it, else null.
  PipelineExecutor *pipeline() { return thePipeline.get(); }
  bool embedded() const { return embeddedShard != nullptr; }
  /// What connecting changed on the PS service, a note each, for the
  /// caller to show: a table that took the plan's optimizer
  /// hyper-parameters.
  const std::vector<std::string> &connectNotes() const { return notes; }

  /// Writes checkpoint `dir`: the parameters, `info`, the seed, and the
  /// tables (into the checkpoint with the embedded server; with servers,
  /// as a PS checkpoint named after it and a random suffix, so that two
  /// jobs' checkpoints never share a name, which MANIFEST records). The
  /// parameters are this process's: synchronize() the stepper first (in a job,
  /// every process does; the first then saves).
  void save(const std::string &dir, CheckpointInfo info);
  /// Loads checkpoint `dir` written by save() and sets the step count;
  /// throws when its tables live where this session's do not. Without
  /// `restoreTables` only the parameters and the step are read (the other
  /// processes of a job, whose first process restores the PS). An
  /// asynchronous run loads before its first step.
  CheckpointInfo load(const std::string &dir, bool restoreTables = true);

  /// A new client of this session's servers with the plan's tables (each
  /// pipelined worker talks to the PS through one of its own); `notesOut`
  /// gets what creating the tables changed (Client::createTables).
  std::unique_ptr<ps::Client>
  connectClient(std::vector<std::string> *notesOut = nullptr);

private:
  /// Restores the tables of checkpoint `dir` into the PS (refused unless
  /// they are the plan's) and gives them the plan's hyper-parameters,
  /// noting the changes in `info`.
  void restoreTablesOf(const std::string &dir, CheckpointInfo &info);
  plan::Plan thePlan;
  SessionOptions options;
  ParamStore theParams;
  std::unique_ptr<ps::Shard> embeddedShard;
  std::unique_ptr<ps::ExpirySweeper> embeddedSweeper;
  std::unique_ptr<ps::Client> theTables;
  std::vector<std::string> notes;
  std::unique_ptr<Program> theProgram;
  bool pipelined = false;
  std::unique_ptr<PipelineExecutor> thePipeline;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_SESSION_H
