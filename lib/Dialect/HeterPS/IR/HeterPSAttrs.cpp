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
