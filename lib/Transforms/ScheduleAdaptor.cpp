//===- ScheduleAdaptor.cpp - IR to placement problem and back -------------===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSBatch.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::heterps;

/// A name for the op in reports and profile tables: its NameLoc when it has
/// one, else its mnemonic and position.
static std::string getOpName(Operation *op, size_t index) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  StringRef mnemonic = op->getName().stripDialect();
  return llvm::formatv("{0}_{1}", mnemonic, index).str();
}

FailureOr<ScheduledFunction>
mlir::heterps::buildScheduledFunction(ModuleOp module,
                                      const ScheduleOptions &options) {
  StringRef pass = options.passName;
  if (options.clusterFile.empty())
    return module.emitError() << pass << ": cluster=FILE is required";
  FailureOr<func::FuncOp> function =
      findModelFunction(module, options.functionName, pass);
  if (failed(function))
    return failure();

  ScheduledFunction result;
  result.function = *function;
  schedule::PlacementProblem &problem = result.problem;
  llvm::Expected<schedule::Cluster> cluster =
      schedule::loadCluster(options.clusterFile);
  if (!cluster)
    return module.emitError()
           << pass << ": " << llvm::toString(cluster.takeError());
  problem.cluster = std::move(*cluster);
  if (!options.profileFile.empty()) {
    llvm::Expected<schedule::ProfileTable> profile =
        schedule::loadProfileTable(options.profileFile);
    if (!profile)
      return module.emitError()
             << pass << ": " << llvm::toString(profile.takeError());
    problem.profile = std::move(*profile);
  }
  problem.throughput = options.throughput;
  problem.batchSize = options.batchSize;
  problem.samples = options.samples;
  problem.microBatches = options.microBatches;
  bool trainingStep =
      (*function)->hasAttr(HeterPSDialect::getTrainingAttrName());
  problem.training = options.training || trainingStep;

  // Which problem op each op belongs to (its owner): a layer's backward ops
  // belong to its forward op, and a parameter load or constant used by one
  // problem op only belongs to that op (a stage holds the parameters it
  // computes with, instead of receiving them through a channel).
  Block &body = function->getBody().front();
  llvm::DenseMap<Operation *, Operation *> ownerOf;
  llvm::DenseMap<int64_t, Operation *> layerLeader;
  for (Operation &op : body.without_terminator()) {
    ownerOf[&op] = &op;
    if (auto layer =
            op.getAttrOfType<IntegerAttr>(HeterPSDialect::getLayerAttrName());
        layer && trainingStep) {
      auto [it, first] = layerLeader.try_emplace(layer.getInt(), &op);
      if (!first)
        ownerOf[&op] = it->second;
    }
  }
  auto finalOwner = [&](Operation *op) {
    while (ownerOf.lookup(op) != op)
      op = ownerOf.lookup(op);
    return op;
  };
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (!isa<LoadParamOp, ConstantOp>(op) || ownerOf[&op] != &op)
      continue;
    Operation *owner = nullptr;
    bool single = true;
    for (Operation *user : op.getUsers()) {
      // The terminator belongs to no problem op.
      Operation *userOwner = ownerOf.count(user) ? finalOwner(user) : nullptr;
      single &= userOwner && (!owner || owner == userOwner);
      owner = userOwner;
    }
    if (owner && single)
      ownerOf[&op] = owner;
  }

  // An op on the batch merged with other dimensions (B*H rows) costs as
  // one on that many rows.
  BatchMultiples multiples(function->getBody());
  auto costOf = [&](Operation *op, schedule::OpInfo &info) {
    if (auto costly = dyn_cast<CostOpInterface>(op)) {
      OpCost cost =
          costly.getCost(multiples.batchSizeOf(op, options.batchSize));
      info.forwardFlops += cost.forwardFlops;
      info.backwardFlops += cost.backwardFlops;
      info.forwardBytes += cost.forwardBytes;
      info.backwardBytes += cost.backwardBytes;
      info.parameterBytes += cost.parameterBytes;
      info.embeddingBytes += cost.embeddingBytes;
    }
  };
  llvm::DenseMap<Operation *, int> indexOf;
  for (Operation &op : body.without_terminator()) {
    if (ownerOf[&op] != &op)
      continue;
    int index = static_cast<int>(result.ops.size());
    indexOf[&op] = index;
    result.ops.push_back(&op);
    result.followers.emplace_back();
  }
  // A layer's backward ops follow its forward op, wherever that went.
  for (Operation &op : body.without_terminator()) {
    Operation *owner = finalOwner(&op);
    if (owner != &op)
      result.followers[indexOf.lookup(owner)].push_back(&op);
  }

  // What a unit keeps per parameter: the parameter and, in training, its
  // gradient and the state of the optimizer that updates it (a forward-only
  // model costed as training is taken to use SGD).
  llvm::StringMap<OptimizerKind> updateOf;
  function->walk([&](UpdateParamOp update) {
    updateOf[update.getName()] = update.getKind();
  });
  auto residentCopies = [&](StringRef param) -> double {
    if (!problem.training)
      return 1;
    auto it = updateOf.find(param);
    OptimizerKind kind = it == updateOf.end() ? OptimizerKind::sgd : it->second;
    return 2 + getOptimizerStateTensors(kind);
  };
  auto residentOf = [&](ArrayRef<Operation *> ops) {
    llvm::StringSet<> seen;
    double bytes = 0;
    for (Operation *op : ops)
      if (auto load = dyn_cast<LoadParamOp>(op);
          load && seen.insert(load.getName()).second)
        bytes += getNumBytes(load.getType(), options.batchSize) *
                 residentCopies(load.getName());
    return bytes;
  };

  for (auto [index, op] : llvm::enumerate(result.ops)) {
    schedule::OpInfo info;
    info.name = getOpName(op, index);
    info.kind = op->getName().getStringRef().str();
    costOf(op, info);
    // Backward ops are in the forward op's training cost; absorbed loads
    // and constants add their own.
    for (Operation *follower : result.followers[index])
      if (isa<LoadParamOp, ConstantOp>(follower))
        costOf(follower, info);
    SmallVector<Operation *> owned{op};
    llvm::append_range(owned, result.followers[index]);
    info.residentBytes = residentOf(owned);
    for (Type type : op->getResultTypes())
      if (auto shaped = dyn_cast<ShapedType>(type))
        info.outputBytes += getNumBytes(shaped, options.batchSize);
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp()) {
        auto it = indexOf.find(finalOwner(producer));
        if (it != indexOf.end() && it->second != static_cast<int>(index) &&
            !llvm::is_contained(info.operands, it->second))
          info.operands.push_back(it->second);
      }
    if (DeviceAttr device = getDevice(op)) {
      info.pinned = problem.cluster.find(device.getResource());
      if (info.pinned < 0)
        return op->emitOpError() << "is pinned to \"" << device.getResource()
                                 << "\", which the cluster file "
                                 << options.clusterFile << " does not define";
      // The placement keeps its name and takes the cluster's kind: another
      // kind is a mistake in the one or the other.
      schedule::ResourceKind kind = problem.cluster.resources[info.pinned].kind;
      if ((kind == schedule::ResourceKind::CPU) !=
          (device.getKind() == ResourceKind::cpu))
        return op->emitOpError()
               << "is pinned to \"" << device.getResource() << "\" as a "
               << stringifyResourceKind(device.getKind())
               << " but the cluster file " << options.clusterFile
               << " declares it a " << schedule::stringifyResourceKind(kind);
    }
    if (op->hasAttr(HeterPSDialect::getStageCutAttrName()))
      result.cuts.push_back(static_cast<int>(index));
    problem.ops.push_back(std::move(info));
  }
  // Tables are costed as the parameter server's: rows and optimizer state.
  for (auto table : module.getOps<EmbeddingTableOp>()) {
    double rows = static_cast<double>(table.getVocab()) *
                  static_cast<double>(table.getDim()) * sizeof(float);
    OptimizerAttr optimizer = table.getOptimizerAttr();
    double copies =
        1 + (optimizer ? getOptimizerStateTensors(optimizer.getKind()) : 0);
    problem.tables.push_back({table.getSymName().str(), rows * copies});
  }
  if (llvm::Error error = problem.validate())
    return module.emitError()
           << pass << ": " << llvm::toString(std::move(error));
  return result;
}

void ScheduledFunction::setAttr(size_t index, StringRef name, Attribute value) {
  ops[index]->setAttr(name, value);
  for (Operation *follower : followers[index])
    follower->setAttr(name, value);
}

SmallVector<Attribute>
mlir::heterps::getResourceAttrs(MLIRContext *context,
                                const schedule::Cluster &cluster) {
  SmallVector<Attribute> resources;
  for (const schedule::ResourceType &type : cluster.resources)
    resources.push_back(DeviceAttr::get(context, type.name,
                                        type.kind == schedule::ResourceKind::CPU
                                            ? ResourceKind::cpu
                                            : ResourceKind::gpu));
  return resources;
}

void mlir::heterps::emitInfeasible(Operation *anchor, StringRef passName,
                                   const schedule::Evaluation &evaluation,
                                   const schedule::PlacementProblem &problem) {
  if (evaluation.outOfMemory) {
    anchor->emitError() << passName << ": the plan does not fit in memory: "
                        << evaluation.reason;
    return;
  }
  anchor->emitError() << passName << ": the throughput target of "
                      << llvm::formatv("{0:f1}", problem.throughput)
                      << " samples/s cannot be met: " << evaluation.reason;
}
