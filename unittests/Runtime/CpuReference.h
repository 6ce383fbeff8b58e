//===- CpuReference.h - One op on the CPU column, for tests -----*- C++ -*-===//
//
// The tests that hold the GPU column's host-compiled arithmetic against the
// CPU column run single ops of the CPU column through this.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_CPUREFERENCE_H
#define HETERPS_UNITTESTS_RUNTIME_CPUREFERENCE_H

#include "heterps/Runtime/Kernel.h"
#include "heterps/plan.pb.h"

#include <vector>

namespace heterps::runtime::testing {

/// Runs `op` on the CPU column; the results' types are what its kernel
/// says for these operands, of element type `result` (or the first
/// operand's).
inline std::vector<Tensor> runOnCpu(const plan::Op &op,
                                    const std::vector<const Tensor *> &in,
                                    DType result = DType::Invalid) {
  std::vector<TensorType> types;
  std::vector<Shape> shapes;
  for (const Tensor *t : in) {
    types.push_back({t->dtype(), t->shape()});
    shapes.push_back(t->shape());
  }
  if (result == DType::Invalid)
    result = in[0]->dtype();
  OpInfo probe(op, types, {{result, {}}});
  std::vector<TensorType> results;
  for (const Shape &s :
       KernelRegistry::global().create(probe, DeviceKind::CPU)->prepare(shapes))
    results.push_back({result, s});
  OpInfo info(op, types, results);
  auto kernel = KernelRegistry::global().create(info, DeviceKind::CPU);
  kernel->prepareChecked(shapes);
  std::vector<Tensor> out;
  std::vector<Tensor *> outs;
  for (const TensorType &t : results)
    out.emplace_back(t.dtype, t.dims);
  for (Tensor &t : out)
    outs.push_back(&t);
  ExecContext ctx;
  kernel->run(in, outs, ctx);
  return out;
}

} // namespace heterps::runtime::testing

#endif // HETERPS_UNITTESTS_RUNTIME_CPUREFERENCE_H
