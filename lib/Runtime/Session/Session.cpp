//===- Session.cpp - A plan ready to train in this process ----------------===//

#include "heterps/Runtime/Session.h"

#include "heterps/PS/LocalConnection.h"

#include "heterps/Runtime/Error.h"
#include "heterps/Support/Paths.h"

#include <cstdio>
#include <filesystem>
#include <random>
#include <sstream>

using namespace heterps;
using namespace heterps::runtime;

Session::Session(plan::Plan plan, SessionOptions opts)
    : thePlan(std::move(plan)), options(std::move(opts)),
      theParams(thePlan, options.program.seed) {
  if (options.pipeline != "auto" && options.pipeline != "on" &&
      options.pipeline != "off")
    fail("unknown pipeline mode '", options.pipeline,
         "' (expected auto, on or off)");
  if (options.ps.empty()) {
    ps::ShardOptions shard;
    shard.absoluteCheckpointPaths = true;
    shard.rocksdbDir = options.rocksdbDir;
    embeddedShard = std::make_unique<ps::Shard>(shard);
    // Tables with --ttl-seconds lose their unused rows here as on a server.
    embeddedSweeper = std::make_unique<ps::ExpirySweeper>(*embeddedShard);
  }
  theTables = connectClient(&notes);
  if (embeddedSweeper)
    embeddedSweeper->tablesChanged();
  // Every process of a job has created the tables before any restores or
  // pushes.
  if (Communicator *job = options.pipelineOptions.processes)
    job->barrier();
  theProgram = std::make_unique<Program>(thePlan, theParams, *theTables,
                                         options.program);
  // Asynchronous training is the pipelined executor's, whatever the plan.
  pipelined = theProgram->isTraining() &&
              (options.pipeline == "on" ||
               options.pipelineOptions.sync == SyncMode::Async ||
               options.pipelineOptions.processes ||
               (options.pipeline == "auto" && needsPipeline(thePlan)));
}

Session::~Session() = default;

StepExecutor &Session::stepper() {
  if (!pipelined)
    return *theProgram;
  if (!thePipeline) {
    PipelineOptions pipelineOptions = options.pipelineOptions;
    // Each worker talks to the PS through a client of its own.
    pipelineOptions.tablesPerWorker = [this] {
      return std::unique_ptr<EmbeddingStore>(connectClient());
    };
    thePipeline = std::make_unique<PipelineExecutor>(
        thePlan, theParams, *theTables, options.program, pipelineOptions);
    thePipeline->setSteps(theProgram->steps());
  }
  return *thePipeline;
}

std::unique_ptr<ps::Client>
Session::connectClient(std::vector<std::string> *notesOut) {
  std::vector<std::unique_ptr<ps::Connection>> servers;
  if (embeddedShard)
    servers.push_back(ps::connectLocal(*embeddedShard));
  else
    for (const std::string &address : ps::parseServerList(options.ps))
      servers.push_back(ps::connectRemote(address, options.client));
  auto client =
      std::make_unique<ps::Client>(std::move(servers), options.client);
  client->connect();
  std::vector<std::string> changed = client->createTables(
      thePlan, options.program.seed, options.tableDefaults);
  if (notesOut)
    *notesOut = std::move(changed);
  return client;
}

void Session::save(const std::string &dir, CheckpointInfo info) {
  // The optimizer state is its optimizer's: load() needs to know whose.
  if (thePlan.has_training())
    info.entries["dense-optimizer"] = thePlan.training().optimizer().kind();
  info.entries["seed"] = std::to_string(options.program.seed);
  saveCheckpoint(dir, theParams, std::move(info),
                 [&](const std::string &tmp, CheckpointInfo &info) {
                   std::string name;
                   if (embeddedShard) {
                     name = tmp + "/ps";
                   } else {
                     // Two jobs saving to directories of one name share the
                     // servers' checkpoint directory: a suffix of their own
                     // keeps one from replacing the other's tables.
                     char suffix[16];
                     std::snprintf(
                         suffix, sizeof(suffix), "%08x",
                         static_cast<unsigned>(std::random_device()()));
                     // The name of `dir`, "run" of "run/" too.
                     name = directoryPath(dir).filename().string() + ".step-" +
                            std::to_string(info.step) + "." + suffix;
                     info.entries["ps-checkpoint"] = name;
                   }
                   theTables->checkpoint(name, info.step);
                 });
}

CheckpointInfo Session::load(const std::string &dir, bool restoreTables) {
  // Asynchronous replicas copy the parameters when the executor starts.
  if (thePipeline && options.pipelineOptions.sync == SyncMode::Async)
    fail("checkpoint '", dir, "': an asynchronous run loads its ",
         "checkpoint before its first step");
  // Everything is read and checked before anything changes: a refused
  // checkpoint leaves the parameters, the tables and the step as they were.
  PendingCheckpoint pending = readCheckpoint(dir, theParams);
  CheckpointInfo info = pending.info;
  // Another optimizer's state would be misread (momentum's velocity as
  // Adagrad's sum of squares: both one slot) or dropped at the first
  // update (Adam's two slots for momentum): a run that switches optimizers
  // starts their state fresh, and says so.
  auto saved = info.entries.find("dense-optimizer");
  bool freshDenseState =
      thePlan.has_training() && saved != info.entries.end() &&
      OptimizerConfig::parseKind(
          saved->second, "checkpoint '" + dir + "' entry dense-optimizer") !=
          OptimizerConfig::parseKind(thePlan.training().optimizer().kind(),
                                     "the plan's training");
  if (restoreTables)
    restoreTablesOf(dir, info);
  pending.apply();
  if (freshDenseState) {
    bool hadState = false;
    for (auto &[name, p] : theParams.all()) {
      hadState = hadState || !p.state.empty() || p.steps;
      p.state = Tensor();
      p.steps = 0;
    }
    if (hadState) {
      std::ostringstream note;
      note << "checkpoint '" << dir << "' holds the " << saved->second
           << " optimizer's state of the dense parameters; this plan trains "
           << "them with " << thePlan.training().optimizer().kind()
           << ", whose state starts fresh";
      info.notes.push_back(note.str());
    }
  }
  theProgram->setSteps(info.step);
  if (thePipeline)
    thePipeline->setSteps(info.step);
  return info;
}

void Session::restoreTablesOf(const std::string &dir, CheckpointInfo &info) {
  // The servers refuse a checkpoint whose tables are not the plan's
  // (dimension, vocabulary, and for training the kind of optimizer) and
  // keep theirs.
  std::vector<ps::v1::TableConfig> expect;
  for (const plan::SparseTable &table : thePlan.tables()) {
    ps::v1::TableConfig &c = expect.emplace_back();
    c.set_table_id(table.id());
    c.set_name(table.name());
    c.set_dim(static_cast<uint32_t>(table.dim()));
    c.set_vocab(static_cast<uint64_t>(table.vocab()));
    if (thePlan.has_training())
      *c.mutable_optimizer() = ps::protocolOptimizer(table.optimizer());
  }
  // A refusal is said in terms of the user's checkpoint and plan, not of
  // the server's checkpoint directory.
  auto restore = [&](const std::string &name) {
    try {
      theTables->restore(name, expect);
    } catch (const std::exception &e) {
      static const std::string kRefused =
          "does not hold the tables as expected: ";
      std::string message = e.what();
      size_t at = message.find(kRefused);
      if (at == std::string::npos)
        throw;
      // What differs, without the server's own advice.
      std::string detail = message.substr(at + kRefused.size());
      detail = detail.substr(0, detail.rfind("; the tables are unchanged"));
      detail = detail.substr(0, detail.find(" (a restored table"));
      fail("checkpoint '", dir, "' does not hold this plan's tables: ", detail,
           "; nothing was loaded. A restored table keeps its dimension, "
           "vocabulary and kind of optimizer (whose state its rows hold): "
           "compile the plan with the checkpoint's, or train the tables from "
           "the start (without loading it)");
    }
  };
  auto named = info.entries.find("ps-checkpoint");
  if (named != info.entries.end()) {
    if (embeddedShard)
      fail("checkpoint '", dir, "' holds its tables in PS ", "checkpoint '",
           named->second,
           "' of a PS service; give its servers (heterps-run --ps, "
           "Trainer(ps=...))");
    restore(named->second);
  } else {
    if (!embeddedShard)
      fail("checkpoint '", dir, "' was written with embedded ",
           "tables; load it with the embedded server (without "
           "heterps-run --ps or Trainer(ps=...))");
    restore(std::filesystem::absolute(dir).string() + "/ps");
  }
  // Inference reads the rows whatever trained them.
  if (!thePlan.has_training())
    return;
  // A restored table keeps the optimizer it was trained with: its rows hold
  // that optimizer's state. The plan's hyper-parameters (a lower learning
  // rate to fine-tune) replace the checkpoint's, the state staying, as
  // PyTorch's do when a param group's lr changes; another kind of
  // optimizer would misread the state, and is refused (by the servers
  // above; here for a server that does not compare them).
  ps::OptimizerChanges changes, refused;
  std::vector<std::pair<int, ps::v1::Optimizer>> retune;
  for (const plan::SparseTable &table : thePlan.tables()) {
    ps::v1::Optimizer had =
        theTables->describe(table.id()).config().optimizer();
    ps::v1::Optimizer want = ps::protocolOptimizer(table.optimizer());
    if (ps::optimizerText(had) == ps::optimizerText(want))
      continue;
    std::string what = "checkpoint '" + dir + "' table " +
                       std::to_string(table.id()) + " optimizer";
    if (OptimizerConfig::parseKind(had.kind(), what) !=
        OptimizerConfig::parseKind(want.kind(), what)) {
      refused.add(table.id(), table.name(), had, want);
      continue;
    }
    changes.add(table.id(), table.name(), had, want);
    retune.emplace_back(table.id(), std::move(want));
  }
  auto holds = [&](const ps::OptimizerChanges::Group &g) {
    return "checkpoint '" + dir + "' holds " + g.tables + " trained with " +
           g.from + "; this plan trains " + g.object() + " with " + g.to;
  };
  if (!refused.groups().empty())
    fail(holds(refused.groups().front()),
         ". A restored table keeps its kind of optimizer, whose state its ",
         "rows hold: compile with the checkpoint's, or train the tables from ",
         "the start (without loading the checkpoint)");
  for (const auto &[table, optimizer] : retune)
    theTables->setTableOptimizer(table, optimizer);
  for (const ps::OptimizerChanges::Group &g : changes.groups())
    info.notes.push_back(holds(g) + ": " + g.retuned());
}
