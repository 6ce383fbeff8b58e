//===- ImportONNXTest.cpp - The ONNX importer's API -----------------------===//

#include "heterps/Import/ONNX/ImportONNX.h"
#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {

std::string fixture(const char *name) {
  return std::string(HETERPS_SOURCE_DIR) + "/test/Import/ONNX/Inputs/" + name;
}

/// Collects the error messages of a context.
struct Errors {
  explicit Errors(MLIRContext &ctx)
      : handler(&ctx, [this](Diagnostic &d) {
          if (d.getSeverity() == DiagnosticSeverity::Error)
            messages.push_back(d.str());
          return success();
        }) {}
  std::vector<std::string> messages;
  ScopedDiagnosticHandler handler;
};

TEST(ImportONNX, InMemoryModelImports) {
  auto buffer = llvm::MemoryBuffer::getFile(fixture("mlp.onnx"));
  ASSERT_TRUE(bool(buffer));
  MLIRContext ctx;
  Errors errors(ctx);
  auto module = heterps::importONNXModel((*buffer)->getBuffer(), "mlp.onnx",
                                         /*baseDir=*/"", &ctx);
  ASSERT_TRUE(succeeded(module)) << errors.messages.front();
  auto main = (**module).lookupSymbol<func::FuncOp>("main");
  ASSERT_TRUE(main);
  EXPECT_EQ((**module).getSymName(), "mlp");
  auto params = (**module).getOps<heterps::ParamOp>();
  EXPECT_EQ(std::distance(params.begin(), params.end()), 6);
  auto result = cast<RankedTensorType>(main.getFunctionType().getResult(0));
  EXPECT_TRUE(result.isDynamicDim(0));
  EXPECT_EQ(result.getDimSize(1), 4);
}

TEST(ImportONNX, TablesKeepTheirInitialRows) {
  MLIRContext ctx;
  Errors errors(ctx);
  auto module = heterps::importONNXFile(fixture("ctr.onnx"), &ctx);
  ASSERT_TRUE(succeeded(module));
  int tables = 0;
  for (auto table : (**module).getOps<heterps::EmbeddingTableOp>()) {
    ++tables;
    ASSERT_TRUE(table.getValue().has_value());
    EXPECT_EQ(table.getVocab(), 50u);
    EXPECT_EQ(table.getDim(), 4u);
  }
  EXPECT_EQ(tables, 8);
}

TEST(ImportONNX, GarbageFailsWithAnError) {
  MLIRContext ctx;
  Errors errors(ctx);
  std::string garbage = "\x08\x96\x01 not a model \xff\xff";
  auto module = heterps::importONNXModel(garbage, "garbage.onnx", "", &ctx);
  EXPECT_TRUE(failed(module));
  ASSERT_EQ(errors.messages.size(), 1u);
  EXPECT_NE(errors.messages[0].find("garbage.onnx"), std::string::npos);
}

TEST(ImportONNX, ExternalDataNeedsADirectory) {
  auto buffer = llvm::MemoryBuffer::getFile(fixture("external.onnx"));
  ASSERT_TRUE(bool(buffer));
  MLIRContext ctx;
  Errors errors(ctx);
  // In memory without a directory the checker looks in the working
  // directory, where the data is not: an error, not a crash.
  auto module = heterps::importONNXModel((*buffer)->getBuffer(),
                                         "external.onnx", "", &ctx);
  EXPECT_TRUE(failed(module));
  EXPECT_FALSE(errors.messages.empty());
}

TEST(ImportONNX, OpTableIsSortedAndComplete) {
  // importNode finds its converter by bisection; the docs list every row.
  ArrayRef<heterps::ONNXOpInfo> ops = heterps::getSupportedONNXOps();
  ASSERT_FALSE(ops.empty());
  for (size_t i = 1; i < ops.size(); ++i)
    EXPECT_LT(ops[i - 1].name, ops[i].name) << "at " << ops[i].name.str();
  for (const heterps::ONNXOpInfo &op : ops)
    EXPECT_TRUE(op.minOpset >= 1 && op.minOpset <= heterps::getMaxONNXOpset())
        << op.name.str() << " from opset " << op.minOpset;
  auto gemm = std::find_if(ops.begin(), ops.end(),
                           [](const auto &op) { return op.name == "Gemm"; });
  ASSERT_NE(gemm, ops.end());
  EXPECT_EQ(gemm->minOpset, 1);
}

} // namespace
