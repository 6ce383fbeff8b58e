//===- ImportLoss.cpp - ONNX loss ops -------------------------------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

using namespace mlir;
using namespace mlir::heterps;
using namespace mlir::heterps::onnx_import;

LogicalResult Importer::convertLoss(bool softmax) {
  std::string red = stringAttr("reduction", "mean");
  std::optional<LossReduction> r = symbolizeLossReduction(red);
  if (!r)
    return nodeError() << "reduction '" << red << "' is not supported";
  bool logProbOut = used(1);
  if (!softmax && failed(onlyFirstOutput()))
    return failure();
  FailureOr<Value> x = input(0), y = input(1);
  if (failed(x) || failed(y))
    return failure();
  FailureOr<Value> w = optionalInput(2);
  if (failed(w))
    return failure();
  Value weight = *w;
  IntegerAttr ignore;
  if (attr("ignore_index"))
    ignore = b.getI64IntegerAttr(intAttr("ignore_index", 0));
  auto ra = LossReductionAttr::get(ctx, *r);
  bool plain = !weight && !ignore;
  // SoftmaxCrossEntropyLoss is log_softmax over the classes and then NLL;
  // the log-probabilities are its optional second output.
  Value logProbs = *x;
  if (softmax && (!plain || logProbOut))
    logProbs =
        LogSoftmaxOp::create(b, loc, x->getType(), *x, b.getI64IntegerAttr(1));
  if (logProbOut)
    setOutput(logProbs, 1);
  if (plain && softmax && !logProbOut)
    return emit(make<SoftmaxCELossOp>(*x, *y, ra));
  if (plain)
    return emit(make<NLLLossOp>(logProbs, *y, ra));
  return emit(make<WeightedNLLLossOp>(logProbs, *y, weight, ignore, ra));
}
