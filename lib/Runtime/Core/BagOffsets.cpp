//===- BagOffsets.cpp - Inputs of bags of different sizes -----------------===//

#include "heterps/Runtime/BagOffsets.h"

#include "heterps/Runtime/Error.h"

using namespace heterps;
using namespace heterps::runtime;

std::vector<int> runtime::bagOffsetsInputs(const plan::Plan &plan) {
  std::vector<int> offsetsOf(plan.inputs_size(), -1);
  for (int i = 0; i < plan.inputs_size(); ++i) {
    const plan::Value &value = plan.values(plan.inputs(i));
    if (!value.has_bag_offsets())
      continue;
    for (int j = 0; j < plan.inputs_size(); ++j)
      if (plan.inputs(j) == value.bag_offsets())
        offsetsOf[i] = j;
    if (offsetsOf[i] < 0 || offsetsOf[i] == i)
      fail("input '", value.name(), "' has its bag offsets in value ",
           value.bag_offsets(), ", which is not another plan input");
  }
  for (int i = 0; i < plan.inputs_size(); ++i)
    if (offsetsOf[i] >= 0 && offsetsOf[offsetsOf[i]] >= 0)
      fail("input '", plan.values(plan.inputs(i)).name(),
           "' has its bag offsets in input '",
           plan.values(plan.inputs(offsetsOf[i])).name(),
           "', which is itself bags");
  return offsetsOf;
}

void runtime::readBagOffsets(const Tensor &offsets, int64_t rows,
                             const std::string &what,
                             std::vector<int64_t> &starts) {
  if (offsets.rank() != 1)
    fail(what, ": the bag offsets are ", offsets.typeString(),
         ", expected a 1-D integer tensor");
  int64_t n = offsets.dim(0);
  starts.resize(n);
  switch (offsets.dtype()) {
  case DType::I64:
    std::copy_n(offsets.as<int64_t>(), n, starts.begin());
    break;
  case DType::I32:
    std::copy_n(offsets.as<int32_t>(), n, starts.begin());
    break;
  default:
    fail(what, ": the bag offsets are ", offsets.typeString(),
         ", expected i64 or i32");
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t previous = i ? starts[i - 1] : 0;
    if (i == 0 && starts[0] != 0)
      fail(what, ": the bag offsets must start at 0, offsets[0] = ", starts[0]);
    if (starts[i] < previous)
      fail(what, ": the bag offsets decrease at offsets[", i, "] = ", starts[i],
           " after ", previous);
    if (starts[i] > rows)
      fail(what, ": offsets[", i, "] = ", starts[i], " is beyond the ", rows,
           " rows of the bags");
  }
}

int64_t runtime::raggedCapacity(int64_t rows) {
  int64_t capacity = 64;
  while (capacity < rows)
    capacity *= 2;
  return capacity;
}
