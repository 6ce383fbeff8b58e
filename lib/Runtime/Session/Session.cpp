//===- Session.cpp - A plan ready to train in this process ----------------===//

#include "heterps/Runtime/Session.h"

#include "heterps/PS/LocalConnection.h"

#include "heterps/Runtime/Error.h"

#include <filesystem>
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
  }
  theTables = connectClient();
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

std::unique_ptr<ps::Client> Session::connectClient() {
  std::vector<std::unique_ptr<ps::Connection>> servers;
  if (embeddedShard)
    servers.push_back(ps::connectLocal(*embeddedShard));
  else
    for (const std::string &address : ps::parseServerList(options.ps))
      servers.push_back(ps::connectRemote(address, options.client));
  auto client =
      std::make_unique<ps::Client>(std::move(servers), options.client);
  client->connect();
  client->createTables(thePlan, options.program.seed, options.tableDefaults);
  return client;
}

/// A table optimizer as the plan and the PS protocol both spell it
/// ("adagrad (learning rate 0.01, ...)"), to compare and to show.
template <typename Optimizer>
static std::string optimizerText(const Optimizer &o) {
  std::ostringstream text;
  text << (o.kind().empty() ? "sgd" : o.kind()) << " (learning rate "
       << o.learning_rate() << ", momentum " << o.momentum() << ", beta1 "
       << o.beta1() << ", beta2 " << o.beta2() << ", epsilon " << o.epsilon()
       << ", weight decay " << o.weight_decay() << ")";
  return text.str();
}

void Session::save(const std::string &dir, CheckpointInfo info) {
  // The optimizer state is its optimizer's: load() needs to know whose.
  if (thePlan.has_training())
    info.entries["dense-optimizer"] = thePlan.training().optimizer().kind();
  saveCheckpoint(dir, theParams, std::move(info),
                 [&](const std::string &tmp, CheckpointInfo &info) {
                   std::string name;
                   if (embeddedShard) {
                     name = tmp + "/ps";
                   } else {
                     name = std::filesystem::absolute(dir).filename().string() +
                            ".step-" + std::to_string(info.step);
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
  CheckpointInfo info = loadCheckpoint(dir, theParams);
  // Another optimizer's state would be misread (momentum's velocity as
  // Adagrad's sum of squares: both one slot) or dropped at the first
  // update (Adam's two slots for momentum): a run that switches optimizers
  // starts their state fresh, and says so.
  auto saved = info.entries.find("dense-optimizer");
  if (thePlan.has_training() && saved != info.entries.end() &&
      OptimizerConfig::parseKind(
          saved->second, "checkpoint '" + dir + "' entry dense-optimizer") !=
          OptimizerConfig::parseKind(thePlan.training().optimizer().kind(),
                                     "the plan's training")) {
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
  if (!restoreTables)
    return info;
  auto named = info.entries.find("ps-checkpoint");
  if (named != info.entries.end()) {
    if (embeddedShard)
      fail("checkpoint '", dir, "' holds its tables in PS ", "checkpoint '",
           named->second,
           "' of a PS service; give its servers (heterps-run --ps, "
           "Trainer(ps=...))");
    theTables->restore(named->second);
  } else {
    if (!embeddedShard)
      fail("checkpoint '", dir, "' was written with embedded ",
           "tables; load it with the embedded server (without "
           "heterps-run --ps or Trainer(ps=...))");
    theTables->restore(std::filesystem::absolute(dir).string() + "/ps");
  }
  // A restored table keeps the optimizer it was trained with (its state is
  // that optimizer's): a plan that trains it otherwise would train on with
  // the checkpoint's optimizer without a word.
  for (const plan::SparseTable &table : thePlan.tables()) {
    ps::v1::TableStatus restored = theTables->describe(table.id());
    std::string have = optimizerText(restored.config().optimizer());
    std::string want = optimizerText(table.optimizer());
    if (have != want)
      fail("checkpoint '", dir, "' holds table ", table.id(), " '",
           table.name(), "' trained with ", have, "; this plan trains it with ",
           want, ". A restored table keeps its optimizer: compile with the ",
           "checkpoint's, or train the tables from the start (without loading ",
           "the checkpoint)");
  }
  return info;
}
