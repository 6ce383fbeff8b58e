//===- train-onnx.cpp - HeterPS as a library: an ONNX model, trained ------===//
//
//   train-onnx MODEL.onnx [STEPS] [PLAN]
//
// Compiles a CTR model (dense and sparse inputs, a click probability out)
// into a training plan with binary cross-entropy and SGD, in process, then
// trains it for STEPS steps (default 20) of 64 synthetic examples with the
// embedding tables in an embedded parameter server. With PLAN, the plan is
// also written there, for heterps-run.
//
//===----------------------------------------------------------------------===//

#include "heterps/Compiler/Compile.h"
#include "heterps/Plan/PlanFile.h"
#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Session.h"
#include "heterps/Runtime/Trainer.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

int main(int argc, char **argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: train-onnx MODEL.onnx [STEPS] [PLAN]\n");
    return 2;
  }
  char *end = nullptr;
  long steps = argc > 2 ? std::strtol(argv[2], &end, 10) : 20;
  if (argc > 2 && (*end || steps < 1)) {
    std::fprintf(stderr, "train-onnx: STEPS takes a positive count, got '%s'\n",
                 argv[2]);
    return 2;
  }

  mlir::heterps::CompileRequest request;
  request.modelPath = argv[1];
  request.pipeline = "builtin.module(heterps-autodiff{loss=bce optimizer=sgd "
                     "learning-rate=0.1})";
  request.batchSize = 64;
  mlir::heterps::CompileResult compiled = mlir::heterps::compileModel(request);
  for (const std::string &diagnostic : compiled.diagnostics)
    std::fprintf(stderr, "%s\n", diagnostic.c_str());
  if (!compiled.succeeded)
    return 1;

  try {
    std::string error;
    if (argc > 3 &&
        !heterps::plan::writePlanFile(compiled.plan, argv[3], error)) {
      std::fprintf(stderr, "train-onnx: %s\n", error.c_str());
      return 1;
    }
    using namespace heterps::runtime;
    Session session(compiled.plan, SessionOptions());

    TrainerOptions options;
    options.steps = steps;
    options.batchSize = 64;
    options.logEvery = 0;
    options.log = [](const std::string &line) {
      std::printf("%s\n", line.c_str());
    };
    Trainer trainer(session.program(), session.stepper(), options);
    DataOptions data;
    data.format = "synthetic";
    trainer.binder().configure(data);
    std::unique_ptr<DataSource> source = openDataSource(data);
    trainer.fit(*source, nullptr);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "train-onnx: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
