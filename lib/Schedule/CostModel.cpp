//===- CostModel.cpp - Time, throughput and cost of a placement -----------===//

#include "heterps/Schedule/CostModel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace heterps::schedule;

CostModel::CostModel(const PlacementProblem &problem) : problem(problem) {
  const Cluster &cluster = problem.cluster;
  int numOps = getNumOps(), numResources = getNumResources();
  double directions = problem.training ? 2 : 1;

  opTime.assign(numOps, std::vector<double>(numResources, 0));
  for (int l = 0; l < numOps; ++l) {
    const OpInfo &op = problem.ops[l];
    for (int t = 0; t < numResources; ++t) {
      const ResourceType &type = cluster.resources[t];
      // A malformed list is left to validate() to report.
      if (op.seconds.size() == static_cast<size_t>(numResources)) {
        opTime[l][t] = op.seconds[t];
        continue;
      }
      double seconds = -1;
      if (problem.profile) {
        auto opIt = problem.profile->seconds.find(op.name);
        if (opIt != problem.profile->seconds.end()) {
          auto timeIt = opIt->second.find(type.name);
          if (timeIt != opIt->second.end())
            seconds = timeIt->second * problem.batchSize /
                      static_cast<double>(problem.profile->batchSize);
        }
      }
      if (seconds < 0) {
        double flops =
            op.forwardFlops + (problem.training ? op.backwardFlops : 0);
        double bytes =
            op.forwardBytes + (problem.training ? op.backwardBytes : 0);
        seconds = std::max(flops / (type.peakGflops * 1e9),
                           bytes / (type.memoryGBps * 1e9));
        // An op with no work (a view, a parameter read) costs no dispatch.
        if (flops > 0 || bytes > 0)
          seconds += directions * type.opOverheadUs * 1e-6;
      }
      // Rows pulled from the parameter server, and in training their
      // gradients pushed back, are the lookup's own traffic.
      if (op.embeddingBytes > 0)
        seconds +=
            directions * cluster.psLinks[t].transferSeconds(op.embeddingBytes);
      opTime[l][t] = seconds;
    }
  }

  opTimePrefix.assign(numResources, std::vector<double>(numOps + 1, 0));
  for (int t = 0; t < numResources; ++t)
    for (int l = 0; l < numOps; ++l)
      opTimePrefix[t][l + 1] = opTimePrefix[t][l] + opTime[l][t];
  parameterPrefix.assign(numOps + 1, 0);
  residentPrefix.assign(numOps + 1, 0);
  activationPrefix.assign(numOps + 1, 0);
  for (int l = 0; l < numOps; ++l) {
    const OpInfo &op = problem.ops[l];
    parameterPrefix[l + 1] = parameterPrefix[l] + op.parameterBytes;
    residentPrefix[l + 1] = residentPrefix[l] + op.residentBytes;
    activationPrefix[l + 1] = activationPrefix[l] + op.outputBytes;
  }

  // A result is live across the cuts from its producer up to its last user.
  std::vector<int> lastUse(numOps, -1);
  for (int l = 0; l < numOps; ++l)
    for (int producer : problem.ops[l].operands)
      lastUse[producer] = std::max(lastUse[producer], l);
  std::vector<double> delta(numOps + 1, 0);
  for (int l = 0; l < numOps; ++l) {
    if (lastUse[l] <= l)
      continue;
    delta[l] += problem.ops[l].outputBytes;
    delta[lastUse[l]] -= problem.ops[l].outputBytes;
  }
  crossing.assign(numOps, 0);
  double live = 0;
  for (int l = 0; l < numOps; ++l) {
    live += delta[l];
    crossing[l] = std::max(0.0, live);
  }
  if (problem.crossingBytes.size() == static_cast<size_t>(numOps))
    crossing = problem.crossingBytes;

  double cheapestUnitSeconds = 0;
  for (int l = 0; l < numOps; ++l) {
    double cheapest = std::numeric_limits<double>::infinity();
    for (int t = 0; t < numResources; ++t)
      if (allowed(l, t))
        cheapest = std::min(cheapest,
                            opTime[l][t] * cluster.resources[t].pricePerHour);
    if (std::isfinite(cheapest))
      cheapestUnitSeconds += cheapest;
  }
  costLowerBound = problem.samples / 3600.0 * cheapestUnitSeconds /
                   static_cast<double>(problem.batchSize);

  double allUnitsPerHour = 0;
  for (const ResourceType &type : cluster.resources)
    allUnitsPerHour += static_cast<double>(type.units) * type.pricePerHour;
  infeasibleBase = problem.samples / problem.throughput / 3600.0 *
                   std::max(allUnitsPerHour, 1e-9);
}

double CostModel::syncSeconds(double parameterBytes, int resource,
                              int64_t units) const {
  if (!problem.training || units <= 1 || parameterBytes <= 0)
    return 0;
  // Ring all-reduce of the stage's dense parameters between its units.
  const Link &link = problem.cluster.links[resource][resource];
  double k = static_cast<double>(units);
  return 2 * (k - 1) / k * parameterBytes / (link.gbps * 1e9) +
         2 * (k - 1) * link.latencyUs * 1e-6;
}

double CostModel::stageSeconds(double compute, double transfer,
                               double parameterBytes, int resource,
                               int64_t units) const {
  return compute / static_cast<double>(units) + transfer +
         syncSeconds(parameterBytes, resource, units);
}

StageEvaluation CostModel::evaluateStage(int first, int last, int resource,
                                         int nextResource,
                                         int64_t inFlight) const {
  StageEvaluation stage;
  stage.resource = resource;
  stage.firstOp = first;
  stage.lastOp = last;
  stage.computeSeconds =
      opTimePrefix[resource][last + 1] - opTimePrefix[resource][first];
  if (nextResource >= 0) {
    const Link &link = problem.cluster.links[resource][nextResource];
    stage.transferSeconds =
        (problem.training ? 2 : 1) * link.transferSeconds(crossing[last]);
  }
  double parameterBytes = parameterPrefix[last + 1] - parameterPrefix[first];
  double batch = static_cast<double>(problem.batchSize);
  double budget = batch / problem.throughput;
  const ResourceType &type = problem.cluster.resources[resource];
  int64_t maxUnits = type.units;

  // Memory: each unit holds the stage's parameters with their gradients and
  // optimizer state, and its share of the batch's activations for the
  // micro-batches in flight (training keeps them until the backward pass;
  // inference only the micro-batch being computed).
  int64_t microBatches = std::max<int64_t>(1, problem.microBatches);
  if (!problem.training)
    inFlight = 1;
  else if (inFlight <= 0 || inFlight > microBatches)
    inFlight = microBatches;
  stage.residentBytes = residentPrefix[last + 1] - residentPrefix[first];
  double activations = (activationPrefix[last + 1] - activationPrefix[first]) *
                       static_cast<double>(inFlight) /
                       static_cast<double>(microBatches);
  stage.memoryLimitBytes = type.memoryGB * 1e9;
  auto activationsPerUnit = [&](int64_t units) {
    return activations / static_cast<double>(std::max<int64_t>(1, units));
  };
  // The fewest units whose memory holds the stage.
  int64_t memoryUnits = maxUnits + 1;
  double spare = stage.memoryLimitBytes - stage.residentBytes;
  if (spare > 0)
    memoryUnits = activations <= 0
                      ? 1
                      : static_cast<int64_t>(std::min<double>(
                            std::ceil(activations / spare * (1 - 1e-12)),
                            static_cast<double>(maxUnits) + 1));
  if (memoryUnits > maxUnits) {
    stage.outOfMemory = true;
    stage.units = 0;
    int64_t units = std::max<int64_t>(1, maxUnits);
    stage.activationBytes = activationsPerUnit(units);
    stage.seconds = stageSeconds(stage.computeSeconds, stage.transferSeconds,
                                 parameterBytes, resource, units);
    stage.syncSeconds = syncSeconds(parameterBytes, resource, units);
    stage.throughput = batch / stage.seconds;
    return stage;
  }

  // ET(k) is convex in k (compute / k falls, synchronisation grows), so the
  // search starts at the bound that ignores synchronisation and stops as soon
  // as ET grows.
  int64_t start = 1;
  if (budget > stage.transferSeconds) {
    double bound = stage.computeSeconds / (budget - stage.transferSeconds);
    start = std::max<int64_t>(
        1, static_cast<int64_t>(std::ceil(bound * (1 - 1e-12))));
  } else {
    start = maxUnits + 1;
  }
  start = std::max(start, memoryUnits);
  double bestSeconds = std::numeric_limits<double>::infinity();
  int64_t bestUnits = 1;
  if (start > maxUnits) {
    // Even every unit does not reach the target: report the best there is.
    bestUnits = std::max<int64_t>(1, maxUnits);
    bestSeconds = stageSeconds(stage.computeSeconds, stage.transferSeconds,
                               parameterBytes, resource, bestUnits);
  }
  for (int64_t k = start; k <= maxUnits; ++k) {
    double seconds = stageSeconds(stage.computeSeconds, stage.transferSeconds,
                                  parameterBytes, resource, k);
    if (seconds <= budget * (1 + 1e-12)) {
      stage.units = k;
      stage.syncSeconds = syncSeconds(parameterBytes, resource, k);
      stage.seconds = seconds;
      stage.throughput = batch / seconds;
      stage.activationBytes = activationsPerUnit(k);
      return stage;
    }
    if (seconds >= bestSeconds)
      break;
    bestSeconds = seconds;
    bestUnits = k;
  }
  stage.units = 0;
  stage.activationBytes = activationsPerUnit(bestUnits);
  stage.seconds = bestSeconds;
  stage.syncSeconds = syncSeconds(parameterBytes, resource, bestUnits);
  stage.throughput = batch / bestSeconds;
  return stage;
}

Evaluation CostModel::evaluate(llvm::ArrayRef<int> assignment,
                               llvm::ArrayRef<int> cuts) const {
  Evaluation result;
  int numOps = getNumOps();
  // Stages are the maximal runs of consecutive ops on one resource type,
  // cut again where asked.
  std::vector<std::pair<int, int>> runs;
  const int *cut = cuts.begin();
  for (int l = 0; l < numOps; ++l) {
    while (cut != cuts.end() && *cut < l)
      ++cut;
    bool cutHere = cut != cuts.end() && *cut == l;
    if (l == 0 || assignment[l] != assignment[l - 1] || cutHere)
      runs.push_back({l, l});
    else
      runs.back().second = l;
  }
  // A stage whose parameters and optimizer state exceed a unit's memory is
  // cut into the fewest stages that hold them (first fit in op order): the
  // pipeline parallelism a model larger than one unit needs, found for
  // every solver, not only for those that choose cuts.
  std::vector<std::pair<int, int>> fitted;
  for (auto [first, last] : runs) {
    double limit = problem.cluster.resources[assignment[first]].memoryGB * 1e9;
    auto resident = [&](int from, int to) {
      return residentPrefix[to + 1] - residentPrefix[from];
    };
    if (resident(first, last) <= limit) {
      fitted.push_back({first, last});
      continue;
    }
    int start = first;
    for (int l = first + 1; l <= last; ++l)
      if (resident(start, l) > limit) {
        fitted.push_back({start, l - 1});
        start = l;
      }
    fitted.push_back({start, last});
  }
  runs.swap(fitted);
  for (size_t i = 0; i < runs.size(); ++i) {
    int next = i + 1 < runs.size() ? assignment[runs[i + 1].first] : -1;
    // 1F1B: stage i starts the backward pass of its first micro-batch after
    // the forward passes of the stages behind it, so it keeps
    // min(micro-batches, stages from it to the last) in flight.
    int64_t inFlight = static_cast<int64_t>(runs.size() - i);
    result.stages.push_back(evaluateStage(runs[i].first, runs[i].second,
                                          assignment[runs[i].first], next,
                                          inFlight));
  }

  const Cluster &cluster = problem.cluster;
  // A stage that no number of units can hold is the first thing to fix. It
  // ranks as a shortfall of the whole target and more, growing with how far
  // the memory is exceeded, so that searches move ops off it.
  double worstOverflow = 0;
  for (size_t i = 0; i < result.stages.size(); ++i) {
    const StageEvaluation &stage = result.stages[i];
    if (!stage.outOfMemory)
      continue;
    double overflow = stage.memoryBytes() / stage.memoryLimitBytes;
    if (overflow > worstOverflow) {
      worstOverflow = overflow;
      result.bottleneckStage = static_cast<int>(i);
    }
  }
  if (result.bottleneckStage >= 0) {
    const StageEvaluation &stage = result.stages[result.bottleneckStage];
    const ResourceType &type = cluster.resources[stage.resource];
    result.throughput = std::numeric_limits<double>::infinity();
    for (const StageEvaluation &each : result.stages)
      result.throughput = std::min(result.throughput, each.throughput);
    result.outOfMemory = true;
    result.shortfall = problem.throughput * worstOverflow;
    result.reason = llvm::formatv(
        "stage {0} (ops {1}..{2} on {3}) needs {4:f2} GB per unit "
        "({5:f2} GB of parameters, gradients and optimizer state, {6:f2} GB "
        "of activations with all {7} unit(s)) but a unit of {3} has {8:f2} "
        "GB",
        result.bottleneckStage, stage.firstOp, stage.lastOp, type.name,
        stage.memoryBytes() / 1e9, stage.residentBytes / 1e9,
        stage.activationBytes / 1e9, type.units, type.memoryGB);
    return result;
  }

  std::vector<int64_t> unitsUsed(cluster.resources.size(), 0);
  result.throughput = std::numeric_limits<double>::infinity();
  double worstShortfall = -1;
  for (size_t i = 0; i < result.stages.size(); ++i) {
    const StageEvaluation &stage = result.stages[i];
    result.throughput = std::min(result.throughput, stage.throughput);
    unitsUsed[stage.resource] += stage.units;
    result.costPerHour += static_cast<double>(stage.units) *
                          cluster.resources[stage.resource].pricePerHour;
    if (stage.units == 0 &&
        problem.throughput - stage.throughput > worstShortfall) {
      worstShortfall = problem.throughput - stage.throughput;
      result.bottleneckStage = static_cast<int>(i);
    }
  }
  if (result.bottleneckStage >= 0) {
    const StageEvaluation &stage = result.stages[result.bottleneckStage];
    const ResourceType &type = cluster.resources[stage.resource];
    result.shortfall = worstShortfall;
    result.reason = llvm::formatv(
        "stage {0} (ops {1}..{2} on {3}) reaches at most {4:f1} samples/s "
        "with {5} unit(s), {6:f1} samples/s short of the target {7:f1}",
        result.bottleneckStage, stage.firstOp, stage.lastOp, type.name,
        stage.throughput, type.units, result.shortfall, problem.throughput);
    return result;
  }
  for (size_t t = 0; t < cluster.resources.size(); ++t) {
    const ResourceType &type = cluster.resources[t];
    if (unitsUsed[t] <= type.units)
      continue;
    // The stages of this type together need more units than there are; the
    // largest of them is named. Scaling the target by the units available
    // estimates what the type can sustain.
    int largest = -1;
    for (size_t i = 0; i < result.stages.size(); ++i)
      if (result.stages[i].resource == static_cast<int>(t) &&
          (largest < 0 ||
           result.stages[i].units > result.stages[largest].units))
        largest = static_cast<int>(i);
    result.bottleneckStage = largest;
    result.shortfall =
        problem.throughput * (1 - static_cast<double>(type.units) /
                                      static_cast<double>(unitsUsed[t]));
    result.reason = llvm::formatv(
        "the stages on {0} need {1} units to reach {2:f1} samples/s but {3} "
        "are available; stage {4} alone needs {5} (about {6:f1} samples/s "
        "short)",
        type.name, unitsUsed[t], problem.throughput, type.units, largest,
        result.stages[largest].units, result.shortfall);
    return result;
  }
  result.feasible = true;
  result.costUsd =
      problem.samples / result.throughput / 3600.0 * result.costPerHour;
  return result;
}

double CostModel::objective(const Evaluation &evaluation) const {
  if (evaluation.feasible)
    return evaluation.costUsd;
  return infeasibleBase * (2 + evaluation.shortfall / problem.throughput);
}
