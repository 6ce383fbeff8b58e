//===- Module.cpp - heterps._heterps, the Python extension ----------------===//
//
// The native half of the `heterps` package: the compiler driver, plans, the
// runtime's Session and Trainer, and PS servers, bound with pybind11. The
// Python half (python/heterps/*.py) gives them their user-facing shape;
// this file stays a thin translation layer (NumPy arrays to tensors,
// exceptions to Python's).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "heterps/PS/Client.h"
#include "heterps/Version.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

PYBIND11_MODULE(_heterps, m) {
  m.doc() = "HeterPS native bindings (use the `heterps` package)";
  m.attr("version") = HETERPS_VERSION;
  py::object base = py::reinterpret_borrow<py::object>(PyExc_RuntimeError);
  static py::exception<heterps::python::Error> error(m, "Error", base);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const heterps::python::Error &e) {
      error(e.what());
    } catch (const heterps::runtime::RuntimeError &e) {
      error(e.what());
    }
  });
  // As in heterps-run and heterps-ps: a PS call that fails names gRPC's
  // reason, and gRPC's own lines (a port in use, a refused handshake, once
  // per attempt) stay off a notebook's stderr unless GRPC_VERBOSITY is set.
  heterps::ps::quietGrpcLog();
  heterps::python::bindCompiler(m);
  heterps::python::bindPlan(m);
  heterps::python::bindRuntime(m);
}
