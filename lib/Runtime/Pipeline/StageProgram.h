//===- StageProgram.h - One replica of one stage ----------------*- C++ -*-===//
//
// The kernels of one stage of a plan, for one replica, split into segments:
// a new segment starts at each heterps.recv of a channel from a later stage
// (a gradient coming back), so that the forward part of a micro-batch can
// run while its gradient is still on its way. A slot holds the values of one
// micro-batch in flight; the activations a forward segment leaves in its
// slot are what the backward segment reads.
//
// An op of a GPU stage runs on the GPU column unless it is a host op, and
// its results live in device memory; the values that cross between the two
// spaces (a stage's inputs and received values, gradients the host's updates
// read) are copied once. What a segment's GPU ops read and the segment
// has when it starts (its inputs, received values) goes to the device
// before its kernels, on a stream of uploads, beside the kernels queued
// before; what a host op of the segment computes goes by a node the
// program inserts before the op that needs it. The values a segment sends
// on or outputs leave the device after its kernels, on a stream of
// downloads: the executor queues the next segment's kernels meanwhile,
// and hands the sends on when the copies are done (copiesReached).
//
// Parameter updates and table pushes are not applied when their segment
// runs: their gradients are summed into the replica's step accumulators,
// weighted by the micro-batch's share of the batch, and applied once per
// step by applyStep(). A GPU stage keeps the parameters it loads in device
// memory (ParamStore::onDevice): their accumulators, the sum over the
// stage's replicas and the update are device work, and only replicas in
// other processes exchange their gradients through host memory.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_LIB_RUNTIME_PIPELINE_STAGEPROGRAM_H
#define HETERPS_LIB_RUNTIME_PIPELINE_STAGEPROGRAM_H

#include "heterps/Runtime/Communicator.h"
#include "heterps/Runtime/DeviceRuntime.h"
#include "heterps/Runtime/Kernel.h"
#include "heterps/Runtime/TableBatch.h"
#include "heterps/Runtime/Trace.h"
#include "heterps/plan.pb.h"

#include <map>
#include <memory>
#include <vector>

namespace heterps::runtime {

/// A value that crosses into or out of a segment through a channel.
struct ChannelPoint {
  int64_t channel = 0;
  int value = 0;
  /// The stage at the other end.
  int peerStage = 0;
};

/// A plan input or output that a segment reads or produces.
struct ProgramPoint {
  int position = 0;
  int value = 0;
};

struct StageSegment {
  std::vector<ChannelPoint> recvs, sends;
  std::vector<ProgramPoint> inputs, outputs;
  size_t firstNode = 0, endNode = 0;
  /// The table lookups whose ids the segment does not compute: their rows
  /// are pulled together before it runs.
  std::vector<size_t> prefetch;
  /// The host values that the segment's GPU ops read and that are there
  /// when it starts (its inputs, received values, earlier segments' host
  /// results), each with the value of its device end: copied on the
  /// device's stream of uploads beside the kernels queued before.
  std::vector<std::pair<int, int>> copiesIn;
  /// The device values the segment sends or outputs, each with the value
  /// of its page-locked host end: copied once the segment's kernels are
  /// done, on the device's stream of downloads, beside the kernels queued
  /// next.
  std::vector<std::pair<int, int>> copiesOut;
};

/// The segments StageProgram splits `stage` into, without building it.
int countStageSegments(const plan::Plan &plan, const plan::Stage &stage);

class StageProgram {
public:
  /// The kernels of `stage` from `registry`'s column of `kind`, as
  /// createKernelFor() picks them; a GPU op's values live in `gpu`'s memory
  /// and values cross between host and device through copies the program
  /// inserts (as Program's do).
  StageProgram(const plan::Plan &plan, const plan::Stage &stage,
               DeviceKind kind, const ExecContext &context,
               const KernelRegistry &registry, DeviceRuntime *gpu,
               bool fallbackToCPU);
  ~StageProgram();

  /// The values of one micro-batch in flight.
  struct Slot {
    std::vector<Tensor> values;
    /// Tensors received from channels, owned until the slot is reused.
    std::vector<Tensor> received;
    /// Reached when the device is done with the last segment run on the
    /// slot, its copies to the host included; `copying` until the host has
    /// seen it reached.
    std::unique_ptr<DeviceFence> copiesDone;
    bool copying = false;
  };

  const std::vector<StageSegment> &segments() const { return segmentList; }
  /// Slots hold this many values: the plan's and the inserted copies.
  size_t valueCount() const { return values; }
  ExecContext &context() { return ctx; }

  /// Runs segment `segment` on `slot`, whose inputs and received values are
  /// bound; updates and pushes are accumulated with weight `weight`. On a
  /// GPU stage it returns once the segment's work is queued: what the
  /// segment sends or outputs is in the slot once copiesReached(slot), and
  /// until then the slot's values must stay as they are (the device still
  /// reads its inputs and received values, and writes its host ends).
  void run(int segment, Slot &slot, double weight);
  /// Whether the last segment run on `slot` is done, its copies to the
  /// host included; does not wait.
  bool copiesReached(Slot &slot);
  /// Waits until copiesReached(slot).
  void finishCopies(Slot &slot);

  /// Clears the step accumulators (before a step's first micro-batch) and
  /// refreshes the replica's own parameters; called when no worker runs.
  void beginStep();
  /// Sums the accumulators of `replicas` (all of this stage's, this one
  /// included) and applies the updates and pushes of share `share` of
  /// `shares` (every shares-th one): the replicas of a stage apply their
  /// step in parallel, each update and push once.
  void applyStep(const std::vector<StageProgram *> &replicas, int share = 0,
                 int shares = 1);
  /// The same for replicas in other processes, `replicas` being the group
  /// of this stage's processes: the dense gradients are summed across them
  /// and every replica applies every update to its own parameters (which
  /// so stay equal); the pushes are gathered and each replica sends its
  /// share of them.
  void applyStep(Communicator &replicas);
  /// Asynchronous training: sends this replica's step gradients to the
  /// tables' store (dense gradients to its dense tensors, which apply the
  /// optimizer), without waiting for the other replicas. With
  /// `applyLocally` the dense updates also go to this replica's own
  /// parameters, so that it sees its own updates before its next pull.
  void pushStepGradients(bool applyLocally);
  /// Copies the current value of every parameter this stage updates from
  /// the store into this replica's parameters.
  void pullParameters();
  /// Makes this replica load its own copy of each parameter that an op of
  /// the stage writes in place (batch norm's running statistics), so that
  /// it does not write the copy that another replica of the stage, sharing
  /// the store, writes. Called for every replica of a stage but its first.
  void keepWrittenParametersPrivate();
  /// Sets this replica's own copies to the store's values, which the
  /// stage's first replica wrote (as PyTorch's DistributedDataParallel
  /// broadcasts the first rank's buffers). Called between steps, when no
  /// worker runs.
  void refreshPrivateParameters();
  /// The names of the parameters this stage updates.
  std::vector<std::string> updatedParameters() const;

  /// Times kernels from now on (ProgramOptions::profile).
  void enableProfiling() { profiling = true; }
  /// Records a span per kernel into `thread`, tagged with the step and
  /// micro-batch set by setTraceContext().
  void setTrace(TraceThread *thread) { trace = thread; }
  void setTraceContext(int64_t step, int64_t microBatch) {
    traceStep = step;
    traceMicroBatch = microBatch;
  }
  void addOpTimes(std::map<const plan::Op *, double> &times) const;

private:
  struct Node;
  /// Runs a deferred update or push on its step's sums.
  void applyNode(Node &node);
  /// Adds `weight` times `g` to the step's gradient of update `node`, in
  /// the memory of the node's column.
  void accumulate(Node &node, const Tensor &g, float weight);
  /// The step's gradient of update `node` in host memory (copied from the
  /// device for a GPU update).
  Tensor &hostGradient(Node &node);
  /// Waits for the device when this stage updates parameters there.
  void waitForDeviceUpdates();
  /// Gives every op that reads a value from the other memory space a copy
  /// of it, made once before the first op that needs it, and copies the
  /// values a segment sends or outputs back to the host.
  void placeValues();
  /// The tensor for result `r` of `node` in `slot`, of its column's memory
  /// space, reallocated only when it does not fit.
  Tensor &resultSlot(Node &node, size_t r, Slot &slot);
  /// Host value `id` of `slot` shaped for a result, page-locked when it is
  /// the host end of a copy, reallocated only when it does not fit.
  Tensor &hostResult(Slot &slot, int id, DType dtype, const Shape &shape);
  /// Queues the copies of `seg`'s copiesIn.
  void startCopiesIn(const StageSegment &seg, Slot &slot);
  /// Device value `id` of `slot` shaped for a result, reallocated only when
  /// it does not fit; sets `allocated` when it was.
  Tensor &deviceResult(Slot &slot, int id, DType dtype, const Shape &shape,
                       bool &allocated);
  const plan::Plan &planRef;
  ExecContext ctx;
  /// The device of the GPU ops (null: every op runs on the CPU).
  DeviceRuntime *gpu = nullptr;
  size_t values = 0;
  /// Per value, whether it is the host end of a copy between host and
  /// device (its buffer is then page-locked).
  std::vector<bool> staged;
  /// The segment's pulls and the step's pushes, in one request each.
  TableBatch batch;
  /// Per node, the store's id of its table (-1: not resolved yet).
  std::vector<int> tableIds;
  /// Sends the pushes the step's deferred ops left in `batch`.
  void flushPushes();
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<StageSegment> segmentList;
  bool profiling = false;
  TraceThread *trace = nullptr;
  int64_t traceStep = 0, traceMicroBatch = -1;
  // Per-run scratch, kept so that a step does not allocate.
  std::vector<const Tensor *> in;
  std::vector<Tensor *> out;
  std::vector<Shape> shapes;
  std::vector<Transfer> copies;
  /// The replica's own copies of the parameters written in place, in the
  /// memory of the loads' column.
  struct PrivateParameter {
    std::string name;
    bool onDevice = false;
    Tensor value;
  };
  std::vector<PrivateParameter> privateParameters;
};

} // namespace heterps::runtime

#endif // HETERPS_LIB_RUNTIME_PIPELINE_STAGEPROGRAM_H
