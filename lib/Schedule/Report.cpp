//===- Report.cpp - The placement report ----------------------------------===//

#include "heterps/Schedule/Report.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace heterps::schedule;
using llvm::json::Array;
using llvm::json::Object;

llvm::json::Value heterps::schedule::buildReport(const CostModel &model,
                                                 const SolverResult &result,
                                                 uint64_t seed) {
  const PlacementProblem &problem = model.getProblem();
  const Evaluation &evaluation = result.evaluation;
  Array stages;
  for (size_t i = 0; i < evaluation.stages.size(); ++i) {
    const StageEvaluation &stage = evaluation.stages[i];
    Array ops;
    for (int l = stage.firstOp; l <= stage.lastOp; ++l)
      ops.push_back(problem.ops[l].name);
    stages.push_back(Object{
        {"index", static_cast<int64_t>(i)},
        {"resource", problem.cluster.resources[stage.resource].name},
        {"units", stage.units},
        {"ops", std::move(ops)},
        {"time_ms", stage.seconds * 1e3},
        {"compute_ms", stage.computeSeconds * 1e3},
        {"transfer_ms", stage.transferSeconds * 1e3},
        {"sync_ms", stage.syncSeconds * 1e3},
        {"throughput", stage.throughput},
        {"memory_gb", stage.memoryBytes() / 1e9},
        {"resident_gb", stage.residentBytes / 1e9},
        {"activation_gb", stage.activationBytes / 1e9},
        {"memory_limit_gb", stage.memoryLimitBytes / 1e9},
    });
  }
  // Tables are always served by the parameter server: a unit holds only
  // the rows of the batches in flight, which count as activations. Whether
  // a table would fit in any unit's memory is said, since that is what
  // users compare against frameworks that keep small tables on the GPU.
  double largestUnitBytes = 0;
  for (const ResourceType &type : problem.cluster.resources)
    largestUnitBytes = std::max(largestUnitBytes, type.memoryGB * 1e9);
  Array tables;
  for (const TableInfo &table : problem.tables)
    tables.push_back(Object{
        {"name", table.name},
        {"gb", table.bytes / 1e9},
        {"location", "ps"},
        {"exceeds_every_unit", table.bytes > largestUnitBytes},
    });
  Object report{
      {"solver", result.solver},
      {"seed", static_cast<int64_t>(seed)},
      {"search_seconds", result.searchSeconds},
      {"feasible", evaluation.feasible},
      {"throughput", evaluation.throughput},
      {"cost_usd", evaluation.feasible ? llvm::json::Value(evaluation.costUsd)
                                       : llvm::json::Value(nullptr)},
      {"cost_per_hour", evaluation.costPerHour},
      {"stages", std::move(stages)},
      {"evaluations", static_cast<int64_t>(result.evaluations)},
      {"search_groups", static_cast<int64_t>(result.groups)},
      {"throughput_target", problem.throughput},
      {"batch_size", problem.batchSize},
      {"micro_batches", problem.microBatches},
      {"tables", std::move(tables)},
      {"samples", problem.samples},
      {"cluster", problem.cluster.name},
  };
  // How far any plan can be from the optimum: the cost over a bound no
  // plan beats (docs/Scheduling.md).
  report["lower_bound_usd"] = model.lowerBoundUsd();
  // A plan at the bound differs from it by rounding only: its gap is 0,
  // not -1e-16.
  if (evaluation.feasible && model.lowerBoundUsd() > 0)
    report["gap_to_bound"] =
        std::max(0.0, evaluation.costUsd / model.lowerBoundUsd() - 1);
  else
    report["gap_to_bound"] = nullptr;
  if (!evaluation.feasible) {
    report["reason"] = evaluation.reason;
    report["bottleneck_stage"] = evaluation.bottleneckStage;
    report["shortfall"] = evaluation.shortfall;
  }
  return llvm::json::Value(std::move(report));
}

llvm::Error heterps::schedule::writeReport(llvm::StringRef path,
                                           const CostModel &model,
                                           const SolverResult &result,
                                           uint64_t seed) {
  std::string temporary = (path + ".tmp").str();
  {
    std::error_code error;
    llvm::raw_fd_ostream os(temporary, error, llvm::sys::fs::OF_Text);
    if (error)
      return llvm::createStringError(error, "cannot write report '%s': %s",
                                     temporary.c_str(),
                                     error.message().c_str());
    os << llvm::formatv("{0:2}", buildReport(model, result, seed)) << "\n";
    os.close();
    if (os.has_error())
      return llvm::createStringError(os.error(), "cannot write report '%s'",
                                     temporary.c_str());
  }
  if (std::error_code error = llvm::sys::fs::rename(temporary, path))
    return llvm::createStringError(error, "cannot write report '%s': %s",
                                   path.str().c_str(), error.message().c_str());
  return llvm::Error::success();
}
