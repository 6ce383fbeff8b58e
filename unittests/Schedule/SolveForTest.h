//===- SolveForTest.h - Running a solver inside a test ----------*- C++ -*-===//

#ifndef HETERPS_UNITTESTS_SCHEDULE_SOLVEFORTEST_H
#define HETERPS_UNITTESTS_SCHEDULE_SOLVEFORTEST_H

#include "heterps/Schedule/Solver.h"

#include <gtest/gtest.h>

namespace heterps {
namespace schedule {

/// Runs the solver `name`; a solver error fails the test (and gives an
/// empty result).
inline SolverResult solve(llvm::StringRef name, const CostModel &model,
                          const SolverOptions &options = {}) {
  llvm::Expected<SolverResult> result = solvePlacement(name, model, options);
  EXPECT_TRUE(static_cast<bool>(result))
      << name.str() << ": " << llvm::toString(result.takeError());
  return result ? *result : SolverResult();
}

} // namespace schedule
} // namespace heterps

#endif // HETERPS_UNITTESTS_SCHEDULE_SOLVEFORTEST_H
