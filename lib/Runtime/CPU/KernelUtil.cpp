//===- KernelUtil.cpp - Helpers shared by the CPU kernels -----------------===//

#include "KernelUtil.h"

#include "CPUDevice.h"

using namespace heterps::runtime;
using namespace heterps::runtime::cpu;

std::vector<int64_t> cpu::stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Shape cpu::broadcastShapes(const Shape &a, const Shape &b, const OpInfo &op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail() << op.describe() << ": shapes " << shapeString(a) << " and "
             << shapeString(b) << " do not broadcast";
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::vector<int64_t> cpu::broadcastStrides(const Shape &in, const Shape &out) {
  std::vector<int64_t> strides(out.size(), 0);
  std::vector<int64_t> own = stridesOf(in);
  size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    strides[i + offset] = in[i] == 1 && out[i + offset] != 1 ? 0 : own[i];
  return strides;
}

void cpu::requireSameShapes(const std::vector<Shape> &in, const OpInfo &op) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0])
      fail() << op.describe() << ": operand " << i << " is "
             << shapeString(in[i]) << ", operand 0 " << shapeString(in[0])
             << "; they must have one shape";
}

int64_t cpu::normalizeAxis(int64_t axis, int64_t rank, const OpInfo &op) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    fail() << op.describe() << ": axis " << axis << " is out of range for rank "
           << rank;
  return a;
}

Shape cpu::resolveDims(const Shape &dims, int64_t batch) {
  Shape s = dims;
  for (int64_t &d : s)
    if (d < 0)
      d = batch;
  return s;
}

void heterps::runtime::registerCPUKernels(KernelRegistry &registry) {
  registerElementwiseKernels(registry);
  registerLinalgKernels(registry);
  registerShapeKernels(registry);
  registerLogicKernels(registry);
  registerReduceKernels(registry);
  registerLossKernels(registry);
  registerRecurrentKernels(registry);
  registerResizeKernels(registry);
  registerCNNKernels(registry);
}
