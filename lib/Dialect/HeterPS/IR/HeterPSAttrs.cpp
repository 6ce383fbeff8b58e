//===- HeterPSAttrs.cpp - HeterPS attributes ------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::heterps;

#include "heterps/Dialect/HeterPS/IR/HeterPSEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.cpp.inc"

void HeterPSDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "heterps/Dialect/HeterPS/IR/HeterPSAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// DeviceAttr
//===----------------------------------------------------------------------===//

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 StringRef resource, ResourceKind kind) {
  if (resource.empty())
    return emitError() << "#heterps.device needs a resource type name";
  return success();
}

//===----------------------------------------------------------------------===//
// StageAssignmentAttr
//===----------------------------------------------------------------------===//

LogicalResult
StageAssignmentAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t index, int64_t units) {
  if (index < 0)
    return emitError() << "stage index must be non-negative, got " << index;
  if (units < 1)
    return emitError() << "a stage needs at least one unit, got " << units;
  return success();
}

//===----------------------------------------------------------------------===//
// InitAttr
//===----------------------------------------------------------------------===//

unsigned InitAttr::getNumArgs(InitKind kind) {
  switch (kind) {
  case InitKind::constant:
    return 1;
  case InitKind::uniform:
  case InitKind::normal:
  case InitKind::truncated_normal:
    return 2;
  default:
    return 0;
  }
}

LogicalResult InitAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               InitKind kind, DenseF64ArrayAttr argsAttr) {
  ArrayRef<double> args = argsAttr ? argsAttr.asArrayRef() : ArrayRef<double>();
  unsigned expected = getNumArgs(kind);
  if (args.size() != expected)
    return emitError() << "initializer " << stringifyInitKind(kind) << " takes "
                       << expected << " argument(s), got " << args.size();
  for (double a : args)
    if (!std::isfinite(a))
      return emitError() << "initializer " << stringifyInitKind(kind)
                         << " needs finite arguments, got " << a;
  if (kind == InitKind::uniform && !(args[0] < args[1]))
    return emitError() << "uniform initializer needs low < high, got ("
                       << args[0] << ", " << args[1] << ")";
  if ((kind == InitKind::normal || kind == InitKind::truncated_normal) &&
      !(args[1] > 0))
    return emitError() << stringifyInitKind(kind)
                       << " initializer needs a positive standard deviation, "
                          "got "
                       << args[1];
  return success();
}

Attribute InitAttr::parse(AsmParser &parser, Type) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseLess() || parser.parseKeyword(&keyword))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown initializer '" << keyword << "'";
    return {};
  }
  SmallVector<double> args;
  if (succeeded(parser.parseOptionalLParen())) {
    if (parser.parseCommaSeparatedList([&]() {
          double value;
          if (parser.parseFloat(value))
            return failure();
          args.push_back(value);
          return success();
        }) ||
        parser.parseRParen())
      return {};
  }
  if (parser.parseGreater())
    return {};
  return getChecked([&] { return parser.emitError(loc); }, parser.getContext(),
                    *kind, DenseF64ArrayAttr::get(parser.getContext(), args));
}

void InitAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  if (getArgs() && !getArgs().empty()) {
    printer << '(';
    llvm::interleaveComma(getArgs().asArrayRef(), printer, [&](double value) {
      printer.printFloat(llvm::APFloat(value));
    });
    printer << ')';
  }
  printer << '>';
}

//===----------------------------------------------------------------------===//
// OptimizerAttr, TrainingAttr, PredictionAttr
//===----------------------------------------------------------------------===//

int mlir::heterps::getOptimizerStateTensors(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::sgd:
    return 0;
  case OptimizerKind::momentum:
  case OptimizerKind::adagrad:
    return 1;
  case OptimizerKind::adam:
    return 2;
  }
  llvm_unreachable("unknown optimizer kind");
}

LogicalResult OptimizerAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, OptimizerKind kind,
    APFloat learningRateValue, APFloat momentumValue, APFloat beta1Value,
    APFloat beta2Value, APFloat epsilonValue, APFloat weightDecayValue) {
  double learningRate = learningRateValue.convertToDouble();
  double momentum = momentumValue.convertToDouble();
  double beta1 = beta1Value.convertToDouble();
  double beta2 = beta2Value.convertToDouble();
  double epsilon = epsilonValue.convertToDouble();
  double weightDecay = weightDecayValue.convertToDouble();
  // Written as negations so that NaN fails every check.
  if (!(learningRate >= 0) || std::isinf(learningRate))
    return emitError() << "optimizer learning_rate must be finite and "
                          "non-negative, got "
                       << learningRate;
  if (!(momentum >= 0 && momentum < 1))
    return emitError() << "optimizer momentum must be in [0, 1), got "
                       << momentum;
  if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1))
    return emitError() << "optimizer beta1 and beta2 must be in [0, 1), got "
                       << beta1 << " and " << beta2;
  if (!(epsilon > 0) || std::isinf(epsilon))
    return emitError() << "optimizer epsilon must be positive, got " << epsilon;
  if (!(weightDecay >= 0) || std::isinf(weightDecay))
    return emitError() << "optimizer weight_decay must be finite and "
                          "non-negative, got "
                       << weightDecay;
  return success();
}

LogicalResult TrainingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   StringRef loss, int64_t lossOutput) {
  if (loss.empty())
    return emitError() << "#heterps.training needs the loss's name";
  if (lossOutput < 0)
    return emitError() << "#heterps.training loss_output must be a result "
                          "index, got "
                       << lossOutput;
  return success();
}

LogicalResult
PredictionAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       APFloat throughput, APFloat costUsd, APFloat costPerHour,
                       ArrayRef<APFloat> stageThroughputs, int64_t batch) {
  if (batch < 0)
    return emitError() << "#heterps.prediction batch must be positive (or "
                          "omitted), got "
                       << batch;
  for (auto [name, value] : {std::pair<StringRef, double>{
                                 "throughput", throughput.convertToDouble()},
                             {"cost_usd", costUsd.convertToDouble()},
                             {"cost_per_hour", costPerHour.convertToDouble()}})
    if (!(value >= 0) || std::isinf(value))
      return emitError() << "#heterps.prediction " << name
                         << " must be finite and non-negative, got " << value;
  for (auto [index, rate] : llvm::enumerate(stageThroughputs))
    if (double value = rate.convertToDouble();
        !(value >= 0) || std::isinf(value))
      return emitError() << "#heterps.prediction stage_throughputs[" << index
                         << "] must be finite and non-negative, got " << value;
  return success();
}
