//===- RLSolver.cpp - The rl placement solver -----------------------------===//
//
// The solver of the HeterPS paper: an LSTM policy reads the ops in order and
// samples a resource type per op (and, with SolverOptions::searchCuts, where
// to start a new stage on the same type); REINFORCE with a moving-average
// baseline and an entropy bonus, optimised with Adam, pushes it towards cheap
// plans. The best plan sampled is returned, polished by the shared local
// search (single-op and contiguous-run moves, Solver.cpp) and by placing the
// boundaries of its runs of one type exactly for the sequence of types the
// policy chose and the sequences next to it (polishRunSequence).
//
// Two choices beyond the paper keep the search from settling on the first
// feasible plan it meets:
//  - The first policy prefers to keep the previous op's type, the more so
//    where much data would cross the cut (LSTMPolicy::initialize): plans
//    sampled early have few stages, cut where cutting is cheap, instead of a
//    type change every other op, which is almost never feasible.
//  - With Adam at the usual learning rates the policy becomes deterministic
//    within a few dozen iterations. Once it has sampled no new plan for a
//    while, the remaining iterations go to a fresh policy (a restart), and
//    the best plan over all runs is kept.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/LSTMPolicy.h"
#include "heterps/Schedule/Solver.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>

using namespace heterps::schedule;

/// Logit bonus of the previous op's type in a fresh policy.
static constexpr double kStayBias = 1.0;
/// Further bonus per unit of the (log-scaled) cut load: a cut that takes a
/// stage's whole time budget to cross is e^10 times less likely than staying.
static constexpr double kCutStayBias = 10.0;
/// Iterations without a plan not sampled before after which the policy is
/// considered converged and restarted.
static constexpr int kPatience = 10;

static llvm::Error rlError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "rl solver: " + message);
}

static llvm::Error checkOptions(const SolverOptions &options) {
  if (options.iterations < 0)
    return rlError(
        llvm::formatv("iterations {0} is negative", options.iterations));
  if (options.samplesPerIteration < 1)
    return rlError(llvm::formatv("samples per iteration {0} is not positive",
                                 options.samplesPerIteration));
  if (options.hiddenSize < 1)
    return rlError(
        llvm::formatv("hidden size {0} is not positive", options.hiddenSize));
  if (!(options.learningRate > 0) || !std::isfinite(options.learningRate))
    return rlError(llvm::formatv("learning rate {0} is not positive",
                                 options.learningRate));
  if (!(options.baselineDecay >= 0 && options.baselineDecay < 1))
    return rlError(llvm::formatv("baseline decay {0} is not in [0, 1)",
                                 options.baselineDecay));
  if (!(options.entropyWeight >= 0) || !std::isfinite(options.entropyWeight))
    return rlError(
        llvm::formatv("entropy weight {0} is negative", options.entropyWeight));
  return llvm::Error::success();
}

/// The types of the runs of one type of `assignment`, in order.
static std::vector<int> getRunTypes(llvm::ArrayRef<int> assignment) {
  std::vector<int> runTypes;
  for (size_t l = 0; l < assignment.size(); ++l)
    if (l == 0 || assignment[l] != assignment[l - 1])
      runTypes.push_back(assignment[l]);
  return runTypes;
}

/// Places the boundaries between the runs of one type of the plan, and the
/// cuts inside them, exactly for the sequence of run types the policy chose
/// (placeRunsExactly), which gets each stage's units right where rounding
/// decides the cost; then tries the sequences one step away (a run removed,
/// given another type, or split or preceded by a run of another type) the
/// same way while one is cheaper. A run that is worth keeping only once it
/// is cut, or removing only once its neighbours are, is out of reach of
/// moves of ops. Returns the plans evaluated.
static uint64_t polishRunSequence(const CostModel &model, bool searchCuts,
                                  std::vector<int> &assignment,
                                  std::vector<int> &cuts) {
  const int numResources = model.getNumResources();
  uint64_t evaluations = 0;
  double best = model.objective(assignment, cuts);
  auto tryRuns = [&](llvm::ArrayRef<int> runTypes) {
    SolverResult placed;
    if (!placeRunsExactly(model, runTypes, searchCuts, placed))
      return false;
    evaluations += placed.evaluations;
    double objective = model.objective(placed.evaluation);
    if (!(objective < best * (1 - 1e-12)))
      return false;
    best = objective;
    assignment = std::move(placed.assignment);
    cuts = std::move(placed.cuts);
    return true;
  };
  tryRuns(getRunTypes(assignment));
  // The sequences one step away: run k removed, given another type, or
  // with a run of another type inside it or before it (or after the last),
  // which the DP then places; runs that become adjacent on one type merge.
  enum class Move { Remove, Retype, Split, Insert };
  auto neighbour = [](std::vector<int> runTypes, size_t k, Move move,
                      int type) {
    switch (move) {
    case Move::Remove:
      runTypes.erase(runTypes.begin() + k);
      break;
    case Move::Retype:
      runTypes[k] = type;
      break;
    case Move::Split:
      runTypes.insert(runTypes.begin() + k + 1, {type, runTypes[k]});
      break;
    case Move::Insert:
      runTypes.insert(runTypes.begin() + k, type);
      break;
    }
    runTypes.erase(std::unique(runTypes.begin(), runTypes.end()),
                   runTypes.end());
    return runTypes;
  };
  bool improved = true;
  while (improved) {
    improved = false;
    std::vector<int> runTypes = getRunTypes(assignment);
    const size_t numRuns = runTypes.size();
    for (size_t k = 0; k <= numRuns && !improved; ++k) {
      if (k < numRuns && numRuns > 1)
        improved = tryRuns(neighbour(runTypes, k, Move::Remove, 0));
      for (int type = 0; type < numResources && !improved; ++type) {
        bool before = k > 0 && runTypes[k - 1] == type;
        bool at = k < numRuns && runTypes[k] == type;
        if (!before && !at)
          improved = tryRuns(neighbour(runTypes, k, Move::Insert, type));
        if (k < numRuns && !at && !improved)
          improved = tryRuns(neighbour(runTypes, k, Move::Retype, type)) ||
                     tryRuns(neighbour(runTypes, k, Move::Split, type));
      }
    }
  }
  return evaluations;
}

llvm::Expected<SolverResult>
heterps::schedule::solveRL(const CostModel &model,
                           const SolverOptions &options) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  if (llvm::Error error = checkOptions(options))
    return error;
  const int numOps = model.getNumOps();
  const int numResources = model.getNumResources();
  if (numOps == 0 || numResources == 0)
    return rlError(
        llvm::formatv("nothing to place ({0} ops, {1} resource types)", numOps,
                      numResources));
  for (int l = 0; l < numOps; ++l) {
    bool any = false;
    for (int t = 0; t < numResources; ++t)
      any = any || model.allowed(l, t);
    if (!any)
      return rlError(llvm::formatv("op {0} ({1}) may run on no resource type",
                                   l, model.getProblem().ops[l].name));
  }

  std::mt19937_64 rng(options.seed);
  const int maxResources = std::max(kDefaultMaxResources, numResources);
  LSTMPolicy policy(getOpFeatureSize(maxResources), options.hiddenSize,
                    maxResources);
  if (!options.policyIn.empty()) {
    if (llvm::Error error = policy.load(options.policyIn))
      return rlError("cannot warm-start: " + llvm::toString(std::move(error)));
  } else {
    policy.initialize(rng, kStayBias, kCutStayBias);
  }
  PolicyInput input = buildPolicyInput(model, maxResources);
  input.allowCuts = options.searchCuts;
  const int cutAction = policy.getCutAction();
  AdamOptimizer adam(policy.getNumParameters(), options.learningRate);

  SolverResult result;
  result.solver = "rl";
  // Once the policy sharpens, most samples repeat earlier plans: each
  // distinct plan is evaluated once.
  // The actions name a plan: its types, and its cuts inside runs of one type.
  std::unordered_map<std::string, double> seen;
  std::vector<int> actions(numOps), plan(numOps), cuts, best, bestCuts;
  double bestObjective = std::numeric_limits<double>::infinity();
  int newPlans = 0;
  bool runFoundBest = false;
  auto score = [&](const LSTMPolicy::Trace &trace, int b) {
    for (int l = 0; l < numOps; ++l)
      actions[l] = trace.action(l, b);
    std::string key(reinterpret_cast<const char *>(actions.data()),
                    actions.size() * sizeof(int));
    auto [it, inserted] = seen.try_emplace(std::move(key), 0.0);
    if (inserted) {
      cuts.clear();
      for (int l = 0; l < numOps; ++l) {
        plan[l] = trace.type(l, b);
        if (actions[l] == cutAction)
          cuts.push_back(l);
      }
      it->second = model.objective(plan, cuts);
      ++result.evaluations;
      ++newPlans;
      if (it->second < bestObjective) {
        bestObjective = it->second;
        best = plan;
        bestCuts = cuts;
        runFoundBest = true;
      }
    }
    return it->second;
  };

  const int batch = options.samplesPerIteration;
  LSTMPolicy::Trace trace, greedyTrace;
  Eigen::MatrixXd weights(numOps, batch);
  Eigen::VectorXd gradient(policy.getNumParameters());
  // The parameters of the run that found the best plan: what is saved.
  Eigen::VectorXd bestParameters = policy.getParameters();
  std::vector<double> rewards(batch);
  double baseline = 0;
  bool haveBaseline = false;
  int stale = 0;
  for (int iteration = 0; iteration < options.iterations; ++iteration) {
    if (options.timeBudgetSeconds > 0 && elapsed() >= options.timeBudgetSeconds)
      break;
    if (stale >= kPatience) {
      if (runFoundBest)
        bestParameters = policy.getParameters();
      runFoundBest = false;
      policy.initialize(rng, kStayBias, kCutStayBias);
      adam = AdamOptimizer(policy.getNumParameters(), options.learningRate);
      haveBaseline = false;
      stale = 0;
    }
    newPlans = 0;

    policy.forward(input, batch, LSTMPolicy::Mode::Sample, &rng, trace);
    // The log of the objective makes the reward scale-free: a plan 10%
    // cheaper than another earns the same advantage on every problem.
    double mean = 0;
    for (int b = 0; b < batch; ++b) {
      rewards[b] = -std::log(score(trace, b));
      mean += rewards[b];
    }
    mean /= batch;
    if (!haveBaseline) {
      baseline = mean;
      haveBaseline = true;
    }
    for (int b = 0; b < batch; ++b)
      weights.col(b).setConstant((rewards[b] - baseline) / batch);
    baseline =
        options.baselineDecay * baseline + (1 - options.baselineDecay) * mean;

    gradient.setZero();
    policy.backward(trace, weights, options.entropyWeight / batch, gradient);
    // Adam descends; the objective is to be maximised.
    gradient = -gradient;
    adam.step(policy.getParameters(), gradient);

    // The policy's most likely plan is often better than any sample.
    policy.forward(input, 1, LSTMPolicy::Mode::Greedy, nullptr, greedyTrace);
    score(greedyTrace, 0);
    stale = newPlans > 0 ? 0 : stale + 1;
    if (options.progress)
      options.progress(
          {iteration + 1, options.iterations, bestObjective, elapsed()});
  }
  if (runFoundBest)
    bestParameters = policy.getParameters();
  if (best.empty()) {
    // No iteration ran (none asked for, or no time): the policy's most
    // likely plan.
    policy.forward(input, 1, LSTMPolicy::Mode::Greedy, nullptr, greedyTrace);
    score(greedyTrace, 0);
    bestParameters = policy.getParameters();
  }

  // Polishing: the shared local search (single ops and contiguous runs moved
  // to another type, the policy's cuts kept) puts right the ops that the
  // sampled plans left slightly off; then the sequence of types of the
  // plan's runs is polished (polishRunSequence).
  // Each step can open moves for the other: alternate while one helps.
  double polished = model.objective(best, bestCuts);
  while (true) {
    result.evaluations += improveByLocalSearch(model, best, bestCuts);
    result.evaluations +=
        polishRunSequence(model, options.searchCuts, best, bestCuts);
    double objective = model.objective(best, bestCuts);
    if (!(objective < polished * (1 - 1e-12)))
      break;
    polished = objective;
  }

  if (!options.policyOut.empty()) {
    policy.getParameters() = bestParameters;
    if (llvm::Error error = policy.save(options.policyOut))
      return error;
  }

  result.assignment = best;
  result.cuts = bestCuts;
  result.evaluation = model.evaluate(best, bestCuts);
  result.searchSeconds = elapsed();
  return result;
}
