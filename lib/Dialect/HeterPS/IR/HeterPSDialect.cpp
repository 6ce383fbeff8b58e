//===- HeterPSDialect.cpp - HeterPS dialect -------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::heterps;

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.cpp.inc"

void HeterPSDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.cpp.inc"
      >();
  registerAttributes();
  attachGradientModels(getContext());
}

static LogicalResult verifyResources(Operation *op, Attribute value) {
  if (!isa<ModuleOp>(op))
    return op->emitOpError() << "'" << HeterPSDialect::getResourcesAttrName()
                             << "' is a module attribute";
  auto list = dyn_cast<ArrayAttr>(value);
  if (!list)
    return op->emitOpError() << "'" << HeterPSDialect::getResourcesAttrName()
                             << "' must be an array of #heterps.device";
  llvm::StringSet<> seen;
  for (Attribute element : list) {
    auto device = dyn_cast<DeviceAttr>(element);
    if (!device)
      return op->emitOpError()
             << "'" << HeterPSDialect::getResourcesAttrName()
             << "' must be an array of #heterps.device, found " << element;
    if (!seen.insert(device.getResource()).second)
      return op->emitOpError()
             << "'" << HeterPSDialect::getResourcesAttrName() << "' lists \""
             << device.getResource() << "\" twice";
  }
  return success();
}

LogicalResult HeterPSDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == getResourcesAttrName())
    return verifyResources(op, attr.getValue());
  if (name == getDeviceAttrName()) {
    auto device = dyn_cast<DeviceAttr>(attr.getValue());
    if (!device)
      return op->emitOpError()
             << "'" << name << "' must be a #heterps.device, found "
             << attr.getValue();
    return verifyDeviceInCluster(op, device);
  }
  if (name == getStageAttrName()) {
    if (!isa<StageAssignmentAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' must be a #heterps.stage_assignment, found "
             << attr.getValue();
    return success();
  }
  if (name == getStageCutAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name << "' is a unit attribute, found "
                               << attr.getValue();
    return success();
  }
  if (name == getPredictionAttrName()) {
    if (!isa<ModuleOp>(op) || !isa<PredictionAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name
                               << "' is a module attribute holding a "
                                  "#heterps.prediction, found "
                               << attr.getValue();
    return success();
  }
  if (name == getTrainingAttrName()) {
    if (!isa<func::FuncOp>(op) || !isa<TrainingAttr>(attr.getValue()))
      return op->emitOpError() << "'" << name
                               << "' is a function attribute holding a "
                                  "#heterps.training, found "
                               << attr.getValue();
    return success();
  }
  if (name == getDropoutIdAttrName()) {
    if (!isa<DropoutOp>(op) || !isa<IntegerAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' is an integer on heterps.dropout";
    return success();
  }
  if (name == getLayerAttrName()) {
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || layer.getValue().isNegative())
      return op->emitOpError()
             << "'" << name << "' must be a non-negative integer, found "
             << attr.getValue();
    return success();
  }
  return op->emitOpError() << "unknown HeterPS attribute '" << name << "'";
}

LogicalResult HeterPSDialect::verifyRegionArgAttribute(Operation *op,
                                                       unsigned region,
                                                       unsigned argIndex,
                                                       NamedAttribute attr) {
  StringRef name = attr.getName().strref();
  if (name == getNameAttrName()) {
    if (!isa<StringAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' of argument " << argIndex
             << " must be a string, found " << attr.getValue();
    return success();
  }
  if (name == getLabelAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError()
             << "'" << name << "' of argument " << argIndex
             << " is a unit attribute, found " << attr.getValue();
    return success();
  }
  if (name != getBagOffsetsAttrName())
    return op->emitOpError()
           << "unknown HeterPS argument attribute '" << name << "'";
  Block &entry = op->getRegion(region).front();
  auto offsets = dyn_cast<IntegerAttr>(attr.getValue());
  int64_t other = offsets ? offsets.getInt() : -1;
  if (!offsets || other < 0 ||
      other >= static_cast<int64_t>(entry.getNumArguments()) ||
      other == static_cast<int64_t>(argIndex))
    return op->emitOpError() << "'" << name << "' of argument " << argIndex
                             << " must name another argument by number, found "
                             << attr.getValue();
  auto bags = dyn_cast<RankedTensorType>(entry.getArgument(argIndex).getType());
  auto starts = dyn_cast<RankedTensorType>(entry.getArgument(other).getType());
  if (!bags || bags.getRank() < 1 || !bags.isDynamicDim(0))
    return op->emitOpError() << "argument " << argIndex
                             << " holds bags of ids: it needs a dynamic "
                                "dimension 0, found "
                             << entry.getArgument(argIndex).getType();
  if (!starts || starts.getRank() != 1 ||
      !isa<IntegerType>(starts.getElementType()))
    return op->emitOpError() << "argument " << other << ", the bag offsets of "
                             << "argument " << argIndex
                             << ", must be a 1-D integer tensor, found "
                             << entry.getArgument(other).getType();
  return success();
}
