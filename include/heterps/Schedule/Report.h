//===- Report.h - The placement report --------------------------*- C++ -*-===//
//
// The JSON report heterps-place-ops writes (report=FILE): the solver, the
// seed, the search time, feasibility, throughput, costs and the stages. The
// schema is in docs/Scheduling.md.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_REPORT_H
#define HETERPS_SCHEDULE_REPORT_H

#include "heterps/Schedule/Solver.h"

#include "llvm/Support/JSON.h"

namespace heterps {
namespace schedule {

/// The report of `result` as a JSON value.
llvm::json::Value buildReport(const CostModel &model,
                              const SolverResult &result, uint64_t seed);

/// Writes the report to `path` (atomically: a temporary file, then rename).
llvm::Error writeReport(llvm::StringRef path, const CostModel &model,
                        const SolverResult &result, uint64_t seed);

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_REPORT_H
