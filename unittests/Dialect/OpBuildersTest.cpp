//===- OpBuildersTest.cpp - Building HeterPS ops from C++ -----------------===//
//
// The importer and the passes build ops without spelling result types: the
// shape rules infer them. These tests build ops that way and check the types,
// and check that bad operands are diagnosed, not crashed on.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSPlacement.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::heterps;

namespace {

class OpBuildersTest : public ::testing::Test {
protected:
  OpBuildersTest() : builder(&context) {
    context.loadDialect<HeterPSDialect, func::FuncDialect>();
    module = ModuleOp::create(builder.getUnknownLoc());
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// A function whose arguments have `types`; the builder is left inside it.
  func::FuncOp makeFunction(TypeRange types) {
    auto function = func::FuncOp::create(builder, builder.getUnknownLoc(), "f",
                                         builder.getFunctionType(types, {}));
    Block *entry = function.addEntryBlock();
    builder.setInsertionPointToStart(entry);
    return function;
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type element = {}) {
    return RankedTensorType::get(shape,
                                 element ? element : builder.getF32Type());
  }

  MLIRContext context;
  OpBuilder builder;
  OwningOpRef<ModuleOp> module;
};

TEST_F(OpBuildersTest, GemmInfersTransposedShape) {
  int64_t dyn = ShapedType::kDynamic;
  func::FuncOp f =
      makeFunction({tensor({dyn, 13}), tensor({64, 13}), tensor({64})});
  Location loc = builder.getUnknownLoc();
  auto gemm = GemmOp::create(builder, loc, f.getArgument(0), f.getArgument(1),
                             f.getArgument(2), /*trans_a=*/false,
                             /*trans_b=*/true, /*alpha=*/APFloat(1.0f),
                             /*beta=*/APFloat(1.0f));
  EXPECT_EQ(gemm.getType(), tensor({dyn, 64}));
  func::ReturnOp::create(builder, loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(OpBuildersTest, BroadcastConcatAndReduceInferShapes) {
  int64_t dyn = ShapedType::kDynamic;
  func::FuncOp f =
      makeFunction({tensor({dyn, 1, 8}), tensor({4, 1}), tensor({dyn, 3, 8})});
  Location loc = builder.getUnknownLoc();
  auto add = AddOp::create(builder, loc, f.getArgument(0), f.getArgument(1));
  EXPECT_EQ(add.getType(), tensor({dyn, 4, 8}));
  auto concat = ConcatOp::create(builder, loc,
                                 ValueRange{add, f.getArgument(2)}, /*axis=*/1);
  EXPECT_EQ(concat.getType(), tensor({dyn, 7, 8}));
  auto sum = ReduceSumOp::create(builder, loc, concat,
                                 builder.getDenseI64ArrayAttr({-1}),
                                 builder.getBoolAttr(false));
  EXPECT_EQ(sum.getType(), tensor({dyn, 7}));
  auto loss = MSELossOp::create(builder, loc, sum, sum, LossReduction::mean);
  EXPECT_EQ(loss.getType(), tensor({}));
  func::ReturnOp::create(builder, loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(OpBuildersTest, ConvAndPoolInferSpatialSizes) {
  int64_t dyn = ShapedType::kDynamic;
  func::FuncOp f =
      makeFunction({tensor({dyn, 3, 224, 224}), tensor({64, 3, 7, 7})});
  Location loc = builder.getUnknownLoc();
  // resnet18's stem: 7x7 stride 2 pad 3, then 3x3 max pool stride 2 pad 1.
  auto conv = ConvOp::create(builder, loc, f.getArgument(0), f.getArgument(1),
                             Value(), builder.getDenseI64ArrayAttr({2, 2}),
                             builder.getDenseI64ArrayAttr({3, 3, 3, 3}),
                             DenseI64ArrayAttr(), builder.getI64IntegerAttr(1));
  EXPECT_EQ(conv.getType(), tensor({dyn, 64, 112, 112}));
  auto pool = MaxPoolOp::create(
      builder, loc, conv, builder.getDenseI64ArrayAttr({3, 3}),
      builder.getDenseI64ArrayAttr({2, 2}),
      builder.getDenseI64ArrayAttr({1, 1, 1, 1}), DenseI64ArrayAttr(),
      builder.getBoolAttr(false));
  EXPECT_EQ(pool.getType(), tensor({dyn, 64, 56, 56}));
  func::ReturnOp::create(builder, loc);
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(OpBuildersTest, BadOperandsAreDiagnosedNotCrashedOn) {
  func::FuncOp f = makeFunction({tensor({3, 4}), tensor({5, 6})});
  std::string message;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diagnostic) {
    if (message.empty())
      message = diagnostic.str();
    return success();
  });
  SmallVector<Type> inferred;
  OperationState state(builder.getUnknownLoc(), GemmOp::getOperationName());
  GemmOp::build(builder, state, tensor({3, 6}), f.getArgument(0),
                f.getArgument(1), Value(), false, false, APFloat(1.0f),
                APFloat(1.0f));
  Operation *op = builder.create(state);
  func::ReturnOp::create(builder, builder.getUnknownLoc());
  EXPECT_TRUE(failed(verify(op)));
  EXPECT_EQ(message, "'heterps.gemm' op inner dimensions differ: op(A) is "
                     "3x4, op(B) is 5x6");
}

TEST_F(OpBuildersTest, PlacementHelpersRoundTrip) {
  func::FuncOp f = makeFunction({tensor({4})});
  auto relu =
      ReluOp::create(builder, builder.getUnknownLoc(), f.getArgument(0));
  EXPECT_FALSE(getDevice(relu));
  auto gpu = DeviceAttr::get(&context, "a100", ResourceKind::gpu);
  setDevice(relu, gpu);
  EXPECT_EQ(getDevice(relu), gpu);
  func::ReturnOp::create(builder, builder.getUnknownLoc());
  EXPECT_TRUE(succeeded(verify(*module)));
}

TEST_F(OpBuildersTest, InitializerAttributeParsesAndPrints) {
  Attribute attr =
      parseAttribute("#heterps.init<truncated_normal(0.0, 0.02)>", &context);
  auto init = dyn_cast_or_null<InitAttr>(attr);
  ASSERT_TRUE(init);
  EXPECT_EQ(init.getKind(), InitKind::truncated_normal);
  ASSERT_EQ(init.getArgs().size(), 2u);
  EXPECT_DOUBLE_EQ(init.getArgs()[1], 0.02);
  EXPECT_EQ(InitAttr::get(&context, InitKind::truncated_normal,
                          ArrayRef<double>{0.0, 0.02}),
            init);
}

} // namespace
