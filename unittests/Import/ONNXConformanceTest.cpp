//===- ONNXConformanceTest.cpp - ONNX node tests match expectations -------===//
//
// Imports every backend node test of the supported ops and compares the
// outcomes with test/Import/ONNX/node-tests.expected. After an intended
// change, regenerate the expectations and docs/SupportedOps.md with
//   heterps-onnx-conformance --update
//       --expected=test/Import/ONNX/node-tests.expected
//       --doc=docs/SupportedOps.md
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

const char *kDataDir = "/usr/share/libonnx-testdata/data/node";

TEST(ImportONNXConformance, NodeTestsMatchExpectations) {
  if (!std::filesystem::exists(kDataDir))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << kDataDir << ")";
  std::string expected =
      std::string(HETERPS_SOURCE_DIR) + "/test/Import/ONNX/node-tests.expected";
  EXPECT_EQ(heterps::conformance::runAll(kDataDir, expected, "",
                                         /*update=*/false, /*verbose=*/false),
            0)
      << "outcomes differ from " << expected << " (see the log)";
}

TEST(ImportONNXConformance, AtLeastNinetyPercentPass) {
  if (!std::filesystem::exists(kDataDir))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << kDataDir << ")";
  std::vector<heterps::conformance::Case> cases =
      heterps::conformance::findCases(kDataDir);
  ASSERT_FALSE(cases.empty());
  int pass = 0;
  for (const auto &c : cases) {
    pass += heterps::conformance::runCase(c, kDataDir).pass;
    EXPECT_FALSE(c.dataSets.empty()) << c.name << " has no data set";
  }
  EXPECT_GE(pass * 10, (int)cases.size() * 9);
}

} // namespace
