//===- CostInterfaceTest.cpp - The cost interface against hand values -----===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::heterps;

namespace {

constexpr const char *kModel = R"mlir(
heterps.embedding_table @t {vocab = 1000 : i64, dim = 16 : i64, initializer = #heterps.init<zeros>}
heterps.param @w1 : tensor<416x256xf32> = #heterps.init<xavier_uniform>
heterps.param @b1 : tensor<256xf32> = #heterps.init<zeros>
func.func @ctr(%ids: tensor<?x26xi64>) -> tensor<?x256xf32> {
  %e = heterps.embedding_lookup @t[%ids] : (tensor<?x26xi64>) -> tensor<?x26x16xf32>
  %x = heterps.reshape %e : (tensor<?x26x16xf32>) -> tensor<?x416xf32>
  %w = heterps.load_param @w1 : tensor<416x256xf32>
  %b = heterps.load_param @b1 : tensor<256xf32>
  %h = heterps.gemm %x, %w, %b : (tensor<?x416xf32>, tensor<416x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %s = heterps.sigmoid %h : tensor<?x256xf32>
  return %s : tensor<?x256xf32>
}
)mlir";

class CostInterfaceTest : public ::testing::Test {
protected:
  CostInterfaceTest() {
    context.loadDialect<HeterPSDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(kModel, &context);
  }

  template <typename OpTy> OpTy find() {
    OpTy found;
    module->walk([&](OpTy op) { found = op; });
    return found;
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
};

TEST_F(CostInterfaceTest, ModelParses) { ASSERT_TRUE(module); }

TEST_F(CostInterfaceTest, GemmCountsMultiplyAddsAndBias) {
  ASSERT_TRUE(module);
  OpCost cost = cast<CostOpInterface>(find<GemmOp>().getOperation())
                    .getCost(/*batchSize=*/512);
  // 2 * M * N * K for the product and 2 * M * N for alpha/beta and the bias.
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 2.0 * 512 * 256 * 416 + 2.0 * 512 * 256);
  EXPECT_DOUBLE_EQ(cost.backwardFlops, 4.0 * 512 * 256 * 416);
  EXPECT_DOUBLE_EQ(cost.forwardBytes,
                   4.0 * (512 * 416 + 416 * 256 + 256 + 512 * 256));
  EXPECT_DOUBLE_EQ(cost.parameterBytes, 0);
}

TEST_F(CostInterfaceTest, LookupPullsRowsFromTheParameterServer) {
  ASSERT_TRUE(module);
  OpCost cost = cast<CostOpInterface>(find<EmbeddingLookupOp>().getOperation())
                    .getCost(/*batchSize=*/100);
  EXPECT_DOUBLE_EQ(cost.embeddingBytes, 100.0 * 26 * 16 * 4);
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 0);
  EXPECT_DOUBLE_EQ(cost.forwardBytes, 100.0 * 26 * 8 + 100.0 * 26 * 16 * 4);
}

TEST_F(CostInterfaceTest, ParametersAndViews) {
  ASSERT_TRUE(module);
  OpCost total;
  module->walk([&](CostOpInterface op) {
    if (isa<LoadParamOp, ReshapeOp>(op.getOperation()))
      total += op.getCost(/*batchSize=*/7);
  });
  EXPECT_DOUBLE_EQ(total.parameterBytes, 4.0 * (416 * 256 + 256));
  EXPECT_DOUBLE_EQ(total.forwardFlops, 0);
  EXPECT_DOUBLE_EQ(total.forwardBytes, 0);
}

TEST_F(CostInterfaceTest, UnaryOpsWeighTheirElements) {
  ASSERT_TRUE(module);
  OpCost cost = cast<CostOpInterface>(find<SigmoidOp>().getOperation())
                    .getCost(/*batchSize=*/10);
  EXPECT_DOUBLE_EQ(cost.forwardFlops, 6.0 * 10 * 256);
  EXPECT_DOUBLE_EQ(cost.backwardFlops, 2 * 6.0 * 10 * 256);
  EXPECT_DOUBLE_EQ(cost.forwardBytes, 2 * 4.0 * 10 * 256);
}

TEST_F(CostInterfaceTest, DynamicDimensionsBindToTheBatch) {
  int64_t dyn = ShapedType::kDynamic;
  auto type = RankedTensorType::get({dyn, 3, 5}, Float32Type::get(&context));
  EXPECT_DOUBLE_EQ(getNumElements(type, 4), 60);
  EXPECT_DOUBLE_EQ(getNumBytes(type, 4), 240);
  auto ids = RankedTensorType::get({dyn}, IntegerType::get(&context, 64));
  EXPECT_DOUBLE_EQ(getNumBytes(ids, 9), 72);
}

} // namespace
