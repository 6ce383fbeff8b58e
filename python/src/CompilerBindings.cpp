//===- CompilerBindings.cpp - heterps._heterps.compile --------------------===//

#include "Bindings.h"

#include "heterps/Compiler/Compile.h"

#include <pybind11/stl.h>

namespace py = pybind11;
using namespace heterps;
using namespace heterps::python;

void python::bindCompiler(py::module_ &m) {
  m.def(
      "compile",
      [](const std::string &modelPath, const py::bytes &modelBytes,
         const std::string &baseDir, const std::string &pipeline,
         const std::string &function, int64_t batchSize) {
        mlir::heterps::CompileRequest request;
        request.modelPath = modelPath;
        request.modelBytes = modelBytes;
        request.baseDir = baseDir;
        request.pipeline = pipeline;
        request.function = function;
        request.batchSize = batchSize;
        mlir::heterps::CompileResult result;
        {
          // The search of a placement takes seconds; other Python threads
          // (a notebook's UI) go on meanwhile.
          py::gil_scoped_release release;
          result = mlir::heterps::compileModel(request);
        }
        py::object plan = py::none();
        if (result.succeeded)
          plan = py::cast(NativePlan{
              std::make_shared<const plan::Plan>(std::move(result.plan))});
        return py::make_tuple(plan, result.diagnostics);
      },
      py::arg("model_path"), py::arg("model_bytes"), py::arg("base_dir"),
      py::arg("pipeline"), py::arg("function"), py::arg("batch_size"),
      "Compiles a model; returns (plan or None, diagnostics).");
}
