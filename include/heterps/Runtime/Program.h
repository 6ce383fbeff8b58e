//===- Program.h - Executing a plan -----------------------------*- C++ -*-===//
//
// A Program is a plan made executable: one kernel per op, created from the
// registry column of its stage's device kind, and a memory plan per input
// signature (batch size and mode) that is built once and reused, so a
// steady-state step allocates nothing. Stages are the unit of execution: in
// one process they run in order and a channel is an alias of the sent
// value; the pipelined and multi-process executors run the same stages.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_PROGRAM_H
#define HETERPS_RUNTIME_PROGRAM_H

#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/EmbeddingStore.h"
#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/ParamStore.h"
#include "heterps/Runtime/PullAhead.h"
#include "heterps/Runtime/TableBatch.h"
#include "heterps/Runtime/Trace.h"
#include "heterps/plan.pb.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace heterps::runtime {

struct ProgramOptions {
  /// Run stages placed on GPUs with the CPU kernels (--fallback=cpu).
  bool fallbackToCPU = false;
  /// How GPU products compute (--gpu-math); set on the device when a stage
  /// runs on it.
  GpuMath gpuMath = GpuMath::F32;
  int threads = 1;
  uint64_t seed = 1;
  /// Time every kernel of a training step (heterps-run --profile).
  bool profile = false;
  /// Pull the next training step's rows while a step runs (PullAhead.h;
  /// heterps-run --ps-pull-ahead).
  PullAheadMode pullAhead = PullAheadMode::Off;
  /// The kernels and the GPU to use; null: the registry of this binary and
  /// this machine's GPU (tests give their own).
  const KernelRegistry *registry = nullptr;
  DeviceRuntime *gpu = nullptr;
};

/// Seconds spent in the kernels of each op of a plan, summed over steps.
using OpTimes = std::map<const plan::Op *, double>;

/// What runs training steps: a Program (one worker) or the pipelined
/// executor (lib/Runtime/Pipeline).
class StepExecutor {
public:
  virtual ~StepExecutor();
  virtual const std::vector<const Tensor *> &
  run(const std::vector<const Tensor *> &inputs, bool training,
      const std::vector<int> &outputs) = 0;
  /// Training steps taken so far (the optimizers' and checkpoints' count).
  virtual int64_t steps() const = 0;
  virtual void setSteps(int64_t steps) = 0;
  /// Adds the kernel time of every op of the training steps run with
  /// ProgramOptions::profile to `times`.
  virtual void addOpTimes(OpTimes &times) const = 0;
  /// Makes every parameter current in this process's ParamStore (before an
  /// evaluation or a checkpoint); executors whose workers share it have
  /// nothing to do.
  virtual void synchronize() {}
  /// Whether pullAhead() does anything (the trainer then reads a batch
  /// ahead).
  virtual bool pullsAhead() const { return false; }
  /// The inputs of the training step after the next run(): their table
  /// rows are pulled while that run computes. The tensors must stay as
  /// they are until the step that uses them has run.
  virtual void pullAhead(const std::vector<const Tensor *> &) {}
};

/// The registry column that runs `stage`: its own kind when this machine
/// and build can, the CPU for a GPU stage with `fallbackToCPU`; otherwise
/// throws naming the stage and why. `gpuStatus` caches the device query
/// between calls: unset before the first, then "" when a GPU is usable or
/// the reason none is.
DeviceKind resolveStageDevice(const plan::Stage &stage,
                              const ProgramOptions &options,
                              std::optional<std::string> &gpuStatus);

class Program : public StepExecutor {
public:
  Program(const plan::Plan &plan, ParamStore &params, EmbeddingStore &tables,
          const ProgramOptions &options);
  ~Program() override;

  const plan::Plan &plan() const { return planRef; }
  bool isTraining() const { return planRef.has_training(); }

  /// Position in the plan's inputs / outputs of the value named `name`, or
  /// -1.
  int inputIndex(const std::string &name) const;
  int outputIndex(const std::string &name) const;
  TensorType inputType(int index) const;
  TensorType outputType(int index) const;
  std::string inputName(int index) const;
  std::string outputName(int index) const;
  bool isLabelInput(int index) const;
  /// Fails naming the input when the given inputs whose plan type has a
  /// dynamic batch dimension (bag ids aside) differ in rows, as the
  /// pipelined executor does: a kernel would otherwise report the mismatch
  /// in terms of its own operands.
  void checkBatchRows(const std::vector<const Tensor *> &inputs) const;

  /// One training step (every op, updates included) or an inference pass
  /// (only the ops that `outputs` need, without side effects). `inputs` are
  /// by input position; inputs that the pass does not read may be empty.
  /// Returns the requested outputs, valid until the next run.
  const std::vector<const Tensor *> &
  run(const std::vector<const Tensor *> &inputs, bool training,
      const std::vector<int> &outputs) override;

  int64_t steps() const override { return context.step; }
  void setSteps(int64_t steps) override { context.step = steps; }
  void addOpTimes(OpTimes &times) const override;
  /// Records a span per kernel of the training steps into `thread`.
  void setTrace(TraceThread *thread) { trace = thread; }
  /// Number of memory plans built so far (one per input signature).
  size_t memoryPlans() const { return plans.size(); }

  bool pullsAhead() const override { return ahead != nullptr; }
  void pullAhead(const std::vector<const Tensor *> &inputs) override;
  /// The pull-ahead's counters, or null when it is off.
  const PullAhead *pullAheadState() const { return ahead.get(); }

private:
  struct Node;
  struct MemoryPlan;
  MemoryPlan &planFor(const std::vector<const Tensor *> &inputs, bool training,
                      const std::vector<int> &outputs);
  /// Whether a memory plan built for input shape `planned` serves `input`
  /// at input `position` (a bag input: any number of ids within the
  /// plan's capacity bucket).
  bool plannedFor(const Shape &planned, const Tensor *input,
                  int position) const;
  /// Prepares `mp`'s ragged ops for the bag inputs' current numbers of ids.
  void prepareRagged(MemoryPlan &mp, const std::vector<const Tensor *> &inputs);
  /// Fills the step's TableBatch with the rows of `mp`'s prefetched
  /// lookups: the batch pulled ahead when it holds them, else one pull.
  void pullRows(MemoryPlan &mp);
  /// Starts pulling the rows of the queued inputs, when they have the
  /// shapes of `mp` (a training plan).
  void startPullAhead(MemoryPlan &mp);
  /// Runs `node` on `values` (a memory plan's, or its pull-ahead's).
  void runNode(Node &node, std::vector<Tensor> &values, bool training);
  /// Finds where `mp`'s training step computes its loss (MemoryPlan::lossAt).
  void findLoss(MemoryPlan &mp) const;
  /// Fails the step, undone, when its loss is NaN or infinite: nothing has
  /// updated a parameter or pushed yet, and a NaN loss would make every
  /// update NaN.
  void checkLoss(MemoryPlan &mp);
  int resolve(int id) const;
  /// Places every value in host or device memory and inserts the copies
  /// the ops of the other space read (DeviceRuntime.h).
  void placeValues();
  /// The plan type of value `id`; a copy's is that of the value it copies.
  TensorType valueType(int id) const;
  /// The value that holds plan output `o` on the host.
  int outputValue(int o) const;

  const plan::Plan &planRef;
  ExecContext context;
  /// The step's table traffic: the lookups of plan inputs pulled at once,
  /// the pushes sent at once.
  std::unique_ptr<TableBatch> batch;
  std::unique_ptr<PullAhead> ahead;
  /// pullAhead()'s inputs, until the next training run starts their pull.
  std::vector<const Tensor *> queued;
  bool haveQueued = false;
  std::vector<std::pair<const plan::Op *, int>> lookupScratch;
  std::vector<const Tensor *> idsScratch;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<int> aliasOf;
  /// The plan's values, then the copies placeValues() made: the value each
  /// copies, by id - plan().values_size().
  int valueCount = 0;
  std::vector<int> copySource;
  /// By output position, the value that holds it on the host (empty when
  /// no op runs on the GPU).
  std::vector<int> outputValues;
  DeviceRuntime *gpu = nullptr;
  /// Per input position, the input holding its bag offsets, or -1
  /// (BagOffsets.h).
  std::vector<int> bagOffsetsOf;
  std::vector<std::unique_ptr<MemoryPlan>> plans;
  MemoryPlan *current = nullptr;
  bool profiling = false;
  TraceThread *trace = nullptr;
  // Per-run scratch, kept so that a step does not allocate.
  std::vector<const Tensor *> inScratch, results;
  /// The outputs of an inference on a batch of no rows.
  std::vector<Tensor> emptyResults;
  std::vector<Tensor *> outScratch;
};

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_PROGRAM_H
