//===- CtrModel.h - A small CTR model for the executor's tests --*- C++ -*-===//
//
// A table lookup (summed bag of 3 ids), a dense input and two GEMM layers,
// compiled into a training step with BCE loss; shared by the tests of the
// memory plan and of GPU placement.
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

inline const char *const kCtrModel = R"mlir(
heterps.embedding_table @t {vocab = 1000 : i64, dim = 8 : i64, initializer = #heterps.init<uniform(-0.1, 0.1)>}
heterps.param @w1 : tensor<12x16xf32> = #heterps.init<xavier_uniform>
heterps.param @b1 : tensor<16xf32> = #heterps.init<zeros>
heterps.param @w2 : tensor<16x1xf32> = #heterps.init<xavier_uniform>
func.func @main(%dense: tensor<?x4xf32> {heterps.name = "dense"},
                %ids: tensor<?x3xi64> {heterps.name = "ids"}) -> tensor<?x1xf32> {
  %e = heterps.embedding_lookup @t[%ids] {combiner = #heterps.combiner<sum>} : (tensor<?x3xi64>) -> tensor<?x8xf32>
  %x = heterps.concat %dense, %e {axis = 1 : i64} : (tensor<?x4xf32>, tensor<?x8xf32>) -> tensor<?x12xf32>
  %w1 = heterps.load_param @w1 : tensor<12x16xf32>
  %b1 = heterps.load_param @b1 : tensor<16xf32>
  %h = heterps.gemm %x, %w1, %b1 : (tensor<?x12xf32>, tensor<12x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %a = heterps.relu %h : tensor<?x16xf32>
  %w2 = heterps.load_param @w2 : tensor<16x1xf32>
  %z = heterps.matmul %a, %w2 : (tensor<?x16xf32>, tensor<16x1xf32>) -> tensor<?x1xf32>
  %p = heterps.sigmoid %z : tensor<?x1xf32>
  return %p : tensor<?x1xf32>
}
)mlir";

/// The training plan of kCtrModel: BCE loss, `optimizer`.
inline plan::Plan compileCtrModel(const std::string &optimizer) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::heterps::HeterPSDialect, mlir::func::FuncDialect>();
  mlir::MLIRContext context(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kCtrModel, &context);
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

} // namespace heterps::fixtures

#endif // HETERPS_UNITTESTS_RUNTIME_CTRMODEL_H
