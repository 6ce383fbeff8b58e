//===- ScheduleAdaptor.cpp - IR to placement problem and back -------------===//

#include "ScheduleAdaptor.h"

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"

#include "llvm/ADT/DenseMap.h"
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
  problem.training = options.training;

  llvm::DenseMap<Operation *, int> indexOf;
  for (Operation &op : function->getBody().front().without_terminator()) {
    int index = static_cast<int>(result.ops.size());
    schedule::OpInfo info;
    info.name = getOpName(&op, index);
    info.kind = op.getName().getStringRef().str();
    if (auto costly = dyn_cast<CostOpInterface>(&op)) {
      OpCost cost = costly.getCost(options.batchSize);
      info.forwardFlops = cost.forwardFlops;
      info.backwardFlops = cost.backwardFlops;
      info.forwardBytes = cost.forwardBytes;
      info.backwardBytes = cost.backwardBytes;
      info.parameterBytes = cost.parameterBytes;
      info.embeddingBytes = cost.embeddingBytes;
    }
    for (Type type : op.getResultTypes())
      if (auto shaped = dyn_cast<ShapedType>(type))
        info.outputBytes += getNumBytes(shaped, options.batchSize);
    for (Value operand : op.getOperands())
      if (Operation *producer = operand.getDefiningOp()) {
        auto it = indexOf.find(producer);
        if (it != indexOf.end() &&
            !llvm::is_contained(info.operands, it->second))
          info.operands.push_back(it->second);
      }
    if (DeviceAttr device = getDevice(&op)) {
      info.pinned = problem.cluster.find(device.getResource());
      if (info.pinned < 0)
        return op.emitOpError() << "is pinned to \"" << device.getResource()
                                << "\", which the cluster file "
                                << options.clusterFile << " does not define";
    }
    indexOf[&op] = index;
    result.ops.push_back(&op);
    problem.ops.push_back(std::move(info));
  }
  if (llvm::Error error = problem.validate())
    return module.emitError()
           << pass << ": " << llvm::toString(std::move(error));
  return result;
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
  anchor->emitError() << passName << ": the throughput target of "
                      << llvm::formatv("{0:f1}", problem.throughput)
                      << " samples/s cannot be met: " << evaluation.reason;
}
