//===- Bindings.h - The parts of heterps._heterps ---------------*- C++ -*-===//

#ifndef HETERPS_PYTHON_BINDINGS_H
#define HETERPS_PYTHON_BINDINGS_H

#include "heterps/Runtime/Error.h"
#include "heterps/Runtime/Tensor.h"
#include "heterps/plan.pb.h"

#include <pybind11/pybind11.h>

#include <memory>

namespace heterps::python {

/// Raised as heterps.Error (a RuntimeError).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A verified plan, shared by the Python objects that use it (a Trainer
/// keeps its plan alive): heterps._heterps.Plan.
struct NativePlan {
  std::shared_ptr<const plan::Plan> plan;
};

/// NumPy's name of a tensor element type, or null when NumPy has none.
const char *numpyName(runtime::DType type);

void bindCompiler(pybind11::module_ &m);
void bindPlan(pybind11::module_ &m);
void bindRuntime(pybind11::module_ &m);

} // namespace heterps::python

#endif // HETERPS_PYTHON_BINDINGS_H
