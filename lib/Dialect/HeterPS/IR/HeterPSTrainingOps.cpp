//===- HeterPSTrainingOps.cpp - Backward ops and optimizer updates --------===//
//
// Verifiers of the ops that heterps-autodiff writes. Their shapes follow the
// forward ops they differentiate, so most checks are that the kinds are ones
// the runtime implements and that the gradient has the forward's type.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::heterps;

static LogicalResult verifyKind(Operation *op, StringRef kind,
                                ArrayRef<StringRef> known) {
  if (llvm::is_contained(known, kind))
    return success();
  std::string list;
  for (StringRef k : known)
    list += (list.empty() ? "" : ", ") + k.str();
  return op->emitOpError() << "unknown kind '" << kind << "'; expected one of "
                           << list;
}

LogicalResult UnaryGradOp::verify() {
  if (failed(verifyKind(*this, getKind(),
                        {"relu", "sigmoid", "tanh", "exp", "log", "sqrt", "neg",
                         "abs", "leaky_relu", "clip", "dropout"})))
    return failure();
  if (getKind() == "dropout" && (!getRatio() || !getDropoutId()))
    return emitOpError() << "dropout gradient needs 'ratio' and 'dropout_id'";
  return success();
}

LogicalResult SumToShapeOp::verify() {
  auto value = cast<RankedTensorType>(getValue().getType());
  auto like = cast<RankedTensorType>(getLike().getType());
  if (value.getElementType() != like.getElementType())
    return emitOpError() << "element types differ: " << value << " and "
                         << like;
  if (like.getRank() > value.getRank())
    return emitOpError() << "cannot sum " << value << " to the higher rank "
                         << like;
  // Broadcasting aligns trailing dimensions; each target dimension is either
  // kept (equal sizes) or summed down to 1.
  int64_t offset = value.getRank() - like.getRank();
  for (int64_t i = 0; i < like.getRank(); ++i) {
    int64_t to = like.getDimSize(i), from = value.getDimSize(i + offset);
    if (to != 1 && to != from && !ShapedType::isDynamic(to) &&
        !ShapedType::isDynamic(from))
      return emitOpError() << "dimension " << i << " of " << like
                           << " is not a broadcast of " << value;
  }
  return success();
}

LogicalResult ReduceGradOp::verify() {
  if (failed(verifyKind(*this, getKind(), {"sum", "mean", "max"})))
    return failure();
  if (getResult().getType() != getResultGrad().getType())
    return emitOpError() << "result gradient type " << getResultGrad().getType()
                         << " differs from the result type "
                         << getResult().getType();
  int64_t rank = cast<RankedTensorType>(getInput().getType()).getRank();
  for (int64_t axis : getAxes())
    if (axis < -rank || axis >= rank)
      return emitOpError() << "axis " << axis << " is out of range for rank "
                           << rank;
  return success();
}

LogicalResult LossGradOp::verify() {
  if (failed(verifyKind(*this, getKind(),
                        {"bce", "mse", "softmax_ce", "nll", "weighted_nll"})))
    return failure();
  if (getPredictionGrad().getType() != getPrediction().getType())
    return emitOpError() << "gradient type " << getPredictionGrad().getType()
                         << " differs from the prediction type "
                         << getPrediction().getType();
  if (getWeight() && getKind() != "weighted_nll")
    return emitOpError() << "only weighted_nll takes class weights";
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  auto keys = cast<RankedTensorType>(getKeys().getType());
  auto rows = cast<RankedTensorType>(getRows().getType());
  auto grad = cast<RankedTensorType>(getResultGrad().getType());
  if (keys.getRank() != 1 || rows.getRank() != 2)
    return emitOpError() << "keys must be 1-D and rows 2-D, got " << keys
                         << " and " << rows;
  if (rows.getDimSize(1) != grad.getDimSize(grad.getRank() - 1))
    return emitOpError() << "row width " << rows.getDimSize(1)
                         << " differs from the gradient's last dimension "
                         << grad.getDimSize(grad.getRank() - 1);
  return success();
}

LogicalResult UpdateParamOp::verify() {
  if (failed(
          verifyKind(*this, getKind(), {"sgd", "momentum", "adam", "adagrad"})))
    return failure();
  if (getLearningRate().convertToDouble() < 0)
    return emitOpError() << "negative learning rate "
                         << getLearningRate().convertToDouble();
  return success();
}

LogicalResult
UpdateParamOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto param = dyn_cast_or_null<ParamOp>(
      symbolTable.lookupNearestSymbolFrom(*this, getNameAttr()));
  if (!param)
    return emitOpError() << "@" << getName()
                         << " does not name a heterps.param";
  if (param.getFrozen())
    return emitOpError() << "parameter @" << getName()
                         << " is frozen and cannot be updated";
  if (param.getType() != getGradient().getType())
    return emitOpError() << "gradient type " << getGradient().getType()
                         << " does not match parameter @" << getName()
                         << " of type " << param.getType();
  return success();
}
