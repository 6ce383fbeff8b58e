//===- HeterPSBatch.cpp - Dynamic dimensions against the batch ------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSBatch.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSShapes.h"
#include "heterps/Support/CheckedMath.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::heterps;

BatchMultiple BatchMultiple::scaled(int64_t n, int64_t d) const {
  if (!known() || n <= 0 || d <= 0)
    return {};
  std::optional<int64_t> a = ::heterps::checkedMul(num, n),
                         c = ::heterps::checkedMul(den, d);
  if (!a || !c)
    return {};
  int64_t g = std::gcd(*a, *c);
  return {*a / g, *c / g};
}

std::string BatchMultiple::str() const {
  return std::to_string(num) + (den == 1 ? "" : "/" + std::to_string(den));
}

static bool hasDynamicDim(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getNumDynamicDims() > 0;
}

/// The product of the static dimensions of `type`; nullopt on overflow.
static std::optional<int64_t> staticElements(RankedTensorType type) {
  std::optional<int64_t> product = 1;
  for (int64_t dim : type.getShape())
    if (!ShapedType::isDynamic(dim) && product)
      product = ::heterps::checkedMul(*product, dim);
  return product;
}

BatchMultiple mlir::heterps::inferBatchMultiple(
    Operation *op, Value result,
    llvm::function_ref<BatchMultiple(Value)> multipleOf) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || type.getNumDynamicDims() == 0)
    return {};
  if (auto reshape = dyn_cast<ReshapeOp>(op)) {
    // The dynamic dimension takes the elements the static ones leave.
    std::optional<int64_t> in = staticElements(reshape.getInput().getType()),
                           out = staticElements(type);
    if (!in || !out)
      return {};
    return multipleOf(reshape.getInput()).scaled(*in, *out);
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    // Joined along the dynamic dimension: a sum of sizes, not followed.
    std::optional<int64_t> axis =
        normalizeAxis(concat.getAxis(), type.getRank());
    if (!axis || ShapedType::isDynamic(type.getDimSize(*axis)))
      return {};
  }
  BatchMultiple multiple;
  bool first = true;
  for (Value operand : op->getOperands()) {
    if (!hasDynamicDim(operand))
      continue;
    BatchMultiple m = multipleOf(operand);
    if (first)
      multiple = m;
    else if (!(m == multiple))
      return {};
    first = false;
  }
  return multiple;
}

BatchMultiples::BatchMultiples(Region &region) {
  if (region.empty())
    return;
  for (BlockArgument arg : region.front().getArguments())
    if (hasDynamicDim(arg))
      multiples[arg] = BatchMultiple::batch();
  region.walk([&](Operation *op) {
    for (Value result : op->getResults()) {
      BatchMultiple m = inferBatchMultiple(
          op, result, [&](Value v) { return multiples.lookup(v); });
      if (m.known())
        multiples[result] = m;
    }
  });
}

int64_t BatchMultiples::batchSizeOf(Operation *op, int64_t batchSize) const {
  auto first = [&](ValueRange values) -> std::optional<BatchMultiple> {
    for (Value v : values)
      if (hasDynamicDim(v))
        return lookup(v);
    return std::nullopt;
  };
  std::optional<BatchMultiple> m = first(op->getResults());
  if (!m)
    m = first(op->getOperands());
  if (!m || !m->known())
    return batchSize;
  double size = static_cast<double>(batchSize) * static_cast<double>(m->num) /
                static_cast<double>(m->den);
  return std::max<int64_t>(1, std::llround(std::min(size, 1e18)));
}
