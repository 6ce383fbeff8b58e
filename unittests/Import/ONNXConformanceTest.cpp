//===- ONNXConformanceTest.cpp - ONNX node tests match expectations -------===//
//
// Imports every backend node test of the supported ops, runs it on the CPU
// runtime and compares the outcomes with
// test/Import/ONNX/node-tests.expected. After an intended
// change, regenerate the expectations and docs/SupportedOps.md with
//   heterps-onnx-conformance --update
//       --expected=test/Import/ONNX/node-tests.expected
//       --doc=docs/SupportedOps.md
//
//===----------------------------------------------------------------------===//

#include "Conformance.h"

#include "heterps/Runtime/Data.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

const char *kDataDir = "/usr/share/libonnx-testdata/data/node";

TEST(ImportONNXConformance, NodeTestsMatchExpectations) {
  if (!std::filesystem::exists(kDataDir))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << kDataDir << ")";
  // docs/SupportedOps.md must be what these outcomes and the importer's op
  // table give.
  std::string expected =
      std::string(HETERPS_SOURCE_DIR) + "/test/Import/ONNX/node-tests.expected";
  std::string doc = std::string(HETERPS_SOURCE_DIR) + "/docs/SupportedOps.md";
  EXPECT_EQ(heterps::conformance::runAll(kDataDir, expected, doc,
                                         /*update=*/false, /*verbose=*/false),
            0)
      << "outcomes differ from " << expected << " or " << doc
      << " is not current (see the log)";
}

TEST(ImportONNXConformance, AtLeastNinetyPercentImport) {
  if (!std::filesystem::exists(kDataDir))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << kDataDir << ")";
  std::vector<heterps::conformance::Case> cases =
      heterps::conformance::findCases(kDataDir);
  ASSERT_FALSE(cases.empty());
  int imports = 0;
  for (const auto &c : cases) {
    imports +=
        heterps::conformance::runCase(c, kDataDir, /*execute=*/false).imports();
    EXPECT_FALSE(c.dataSets.empty()) << c.name << " has no data set";
  }
  EXPECT_GE(imports * 10, (int)cases.size() * 9);
}

/// A copy of case `from` under `dir`, with input 0 or output 0 replaced by
/// a file of another case.
heterps::conformance::Case copyCase(const std::string &from,
                                    const fs::path &dir,
                                    const std::string &replace = "",
                                    const fs::path &with = {}) {
  fs::path src = fs::path(kDataDir) / from, dst = dir / from;
  fs::create_directories(dst / "test_data_set_0");
  fs::copy_file(src / "model.onnx", dst / "model.onnx");
  for (const char *f : {"input_0.pb", "output_0.pb"})
    fs::copy_file(replace == f ? with : src / "test_data_set_0" / f,
                  dst / "test_data_set_0" / f);
  for (const auto &c : heterps::conformance::findCases(dir.string()))
    if (c.name == from)
      return c;
  ADD_FAILURE() << "no case " << from << " under " << dir;
  return {};
}

TEST(ImportONNXConformance, ExecutesAndComparesOutputs) {
  if (!std::filesystem::exists(kDataDir))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << kDataDir << ")";
  using heterps::conformance::Status;
  fs::path dir = fs::temp_directory_path() /
                 ("heterps-conformance-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path data = fs::path(kDataDir);

  // test_abs: x f32[3, 4, 5] -> |x|.
  heterps::conformance::Outcome ok = heterps::conformance::runCase(
      copyCase("test_abs", dir / "ok"), (dir / "ok").string());
  EXPECT_EQ(ok.status, Status::Pass) << ok.describe();

  // The expected output replaced by the input (which has negative values):
  // the worst element is named with both values.
  heterps::conformance::Outcome wrong = heterps::conformance::runCase(
      copyCase("test_abs", dir / "wrong", "output_0.pb",
               data / "test_abs/test_data_set_0/input_0.pb"),
      (dir / "wrong").string());
  EXPECT_EQ(wrong.status, Status::WrongResult) << wrong.describe();
  EXPECT_NE(wrong.reason.find("output 'y' ["), std::string::npos)
      << wrong.reason;
  EXPECT_NE(wrong.reason.find(": expected -"), std::string::npos)
      << wrong.reason;
  EXPECT_NE(wrong.reason.find("elements differ"), std::string::npos)
      << wrong.reason;

  // An input of another shape: the runtime's error is the outcome.
  heterps::conformance::Outcome bad = heterps::conformance::runCase(
      copyCase("test_abs", dir / "bad", "input_0.pb",
               data / "test_add_bcast/test_data_set_0/input_1.pb"),
      (dir / "bad").string());
  EXPECT_EQ(bad.status, Status::RuntimeError) << bad.describe();
  EXPECT_NE(bad.reason.find("input 'x'"), std::string::npos) << bad.reason;

  // Without execution only the import is checked.
  EXPECT_EQ(heterps::conformance::runCase(
                copyCase("test_abs", dir / "import", "output_0.pb",
                         data / "test_abs/test_data_set_0/input_0.pb"),
                (dir / "import").string(), /*execute=*/false)
                .status,
            Status::Pass);
  fs::remove_all(dir);
}

TEST(ImportONNXConformance, DynamicBatchTakesTheInputsSize) {
  // mlp.onnx: x f32[batch, 16] -> probs f32[batch, 4] (a softmax, so every
  // element is positive).
  fs::path dir = fs::temp_directory_path() /
                 ("heterps-conformance-batch-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path model = fs::path(HETERPS_SOURCE_DIR) / "test/Import/ONNX/Inputs";
  auto makeCase = [&](const std::string &name, int64_t batch,
                      int64_t expectedBatch) {
    fs::path set = dir / name / "test_data_set_0";
    fs::create_directories(set);
    fs::copy_file(model / "mlp.onnx", dir / name / "model.onnx");
    heterps::runtime::Tensor x(heterps::runtime::DType::F32, {batch, 16});
    for (int64_t i = 0; i < x.numElements(); ++i)
      x.as<float>()[i] = 0.01f * float(i % 37) - 0.2f;
    heterps::runtime::writeTensorProto((set / "input_0.pb").string(), "x", x);
    heterps::runtime::writeTensorProto(
        (set / "output_0.pb").string(), "probs",
        heterps::runtime::Tensor(heterps::runtime::DType::F32,
                                 {expectedBatch, 4}));
  };
  makeCase("batch3", 3, 3);
  makeCase("batch5", 5, 3);
  std::vector<heterps::conformance::Case> cases =
      heterps::conformance::findCases(dir.string());
  ASSERT_EQ(cases.size(), 2u);
  // All-zero expectations: the run has the input's batch (12 elements, all
  // different) ...
  heterps::conformance::Outcome three =
      heterps::conformance::runCase(cases[0], dir.string());
  EXPECT_EQ(three.status, heterps::conformance::Status::WrongResult)
      << three.describe();
  EXPECT_NE(three.reason.find("(12 of 12 elements differ)"), std::string::npos)
      << three.reason;
  // ... and a batch of 5 gives 5 rows, which the shape check reports.
  heterps::conformance::Outcome five =
      heterps::conformance::runCase(cases[1], dir.string());
  EXPECT_EQ(five.reason, "output 'probs' has shape [5, 4], expected [3, 4]")
      << five.describe();
  fs::remove_all(dir);
}

} // namespace
