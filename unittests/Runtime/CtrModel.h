//===- CtrModel.h - A small CTR model for the executor's tests --*- C++ -*-===//
//
// Inputs/ctr-model.mlir (a table lookup of a summed bag of 3 ids, a dense
// input and two GEMM layers) compiled into a training step with BCE loss;
// shared by the tests of the memory plan and of GPU placement.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_UNITTESTS_RUNTIME_CTRMODEL_H
#define HETERPS_UNITTESTS_RUNTIME_CTRMODEL_H

#include "heterps/Dialect/HeterPS/IR/HeterPSDialect.h"
#include "heterps/Target/Plan/PlanEmitter.h"
#include "heterps/Transforms/Passes.h"
#include "heterps/plan.pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>

namespace heterps::fixtures {

/// The training plan of the model in Inputs/`file`: BCE loss, `optimizer`.
inline plan::Plan compileModel(const std::string &file,
                               const std::string &optimizer) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(
      std::string(HETERPS_UNITTEST_INPUTS) + "/" + file, &context);
  EXPECT_TRUE(module);
  mlir::PassManager pm(&context);
  mlir::heterps::AutodiffPassOptions options;
  options.loss = mlir::heterps::AddedLoss::bce;
  options.optimizer = *mlir::heterps::symbolizeOptimizerKind(optimizer);
  pm.addPass(mlir::heterps::createAutodiffPass(options));
  EXPECT_TRUE(mlir::succeeded(pm.run(*module)));
  plan::Plan p;
  EXPECT_TRUE(mlir::succeeded(mlir::heterps::emitPlan(*module, {}, p)));
  return p;
}

/// The training plan of the CTR model: BCE loss, `optimizer`.
inline plan::Plan compileCtrModel(const std::string &optimizer) {
  return compileModel("ctr-model.mlir", optimizer);
}

} // namespace heterps::fixtures

#endif // HETERPS_UNITTESTS_RUNTIME_CTRMODEL_H
