//===- PlanSignaturesTest.cpp - The plan format's ops against ODS ---------===//
//
// The runtime does not include MLIR, so the plan format keeps its own table
// of ops (lib/Plan/OpSignatures.cpp) and refuses attributes an op does not
// take. These tests hold that table to the dialect's ODS: an attribute added
// to an op in ODS but not to the table would make every plan with it invalid.
//
//===----------------------------------------------------------------------===//

#include "heterps/Dialect/HeterPS/IR/HeterPSOps.h"
#include "heterps/Plan/OpSignatures.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace mlir;
namespace plan = ::heterps::plan;

namespace {

std::vector<std::string> split(const char *list) {
  std::istringstream in(list);
  std::vector<std::string> out;
  for (std::string name; in >> name;)
    out.push_back(name);
  return out;
}

TEST(PlanSignaturesTest, AttributesAreTheDialectsOwn) {
  MLIRContext context;
  context.loadDialect<mlir::heterps::HeterPSDialect>();
  int checked = 0;
  for (RegisteredOperationName op : context.getRegisteredOperations()) {
    if (op.getDialectNamespace() != "heterps")
      continue;
    std::string name = op.getStringRef().str();
    const plan::OpSignature *signature = plan::findOpSignature(name);
    if (!signature)
      continue; // structure (stages, tables, parameters), not a plan op
    std::vector<std::string> declared;
    for (StringAttr attr : op.getAttributeNames())
      declared.push_back(attr.str());
    // The emitter writes the discardable heterps.dropout_id of a dropout
    // as `dropout_id`, the name unary_grad's ODS gives it.
    if (name == "heterps.dropout")
      declared.push_back("dropout_id");
    std::sort(declared.begin(), declared.end());
    std::vector<std::string> listed = split(signature->attributes);
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, declared) << name;
    for (const std::string &attr : declared)
      EXPECT_TRUE(plan::allowsAttribute(*signature, attr))
          << name << " " << attr;
    ++checked;
  }
  // Every op of the plan format is an op of the dialect.
  std::vector<std::string> names = plan::planOpNames();
  EXPECT_EQ(checked, static_cast<int>(names.size()));
  for (const std::string &name : names)
    EXPECT_TRUE(RegisteredOperationName::lookup(name, &context)) << name;
}

TEST(PlanSignaturesTest, OnlyListedAttributesAreAllowed) {
  const plan::OpSignature *gemm = plan::findOpSignature("heterps.gemm");
  ASSERT_NE(gemm, nullptr);
  for (const char *attr :
       {"alpha", "beta", "trans_a", "trans_b", "heterps.layer"})
    EXPECT_TRUE(plan::allowsAttribute(*gemm, attr)) << attr;
  // Neither a misspelling, nor a prefix or suffix of a listed name, nor
  // the empty name, nor the placement the stage carries.
  for (const char *attr : {"transB", "trans", "trans_b_", "alph", "", " ",
                           "heterps.device", "alpha beta"})
    EXPECT_FALSE(plan::allowsAttribute(*gemm, attr)) << attr;
  const plan::OpSignature *relu = plan::findOpSignature("heterps.relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_FALSE(plan::allowsAttribute(*relu, "alpha"));
  EXPECT_FALSE(plan::allowsAttribute(*relu, ""));
  EXPECT_TRUE(plan::allowsAttribute(*relu, "heterps.layer"));
}

} // namespace
