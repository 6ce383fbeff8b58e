//===- Clustering.cpp - Ops grouped into layers before the search ---------===//

#include "heterps/Schedule/Clustering.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <limits>
#include <string>

using namespace heterps::schedule;

std::vector<int>
OpClustering::expand(llvm::ArrayRef<int> groupAssignment) const {
  std::vector<int> assignment(begin.back());
  for (int g = 0; g < getNumGroups(); ++g)
    std::fill(assignment.begin() + begin[g], assignment.begin() + begin[g + 1],
              groupAssignment[g]);
  return assignment;
}

/// Where to cut: after at least a group's share of the work, at most twice
/// it, the cut with the fewest crossing bytes, preferring cuts where the
/// type that runs an op cheapest changes (where plans change type). A change
/// of pin is always a cut.
static std::vector<int> chooseCuts(const CostModel &model, int maxGroups) {
  const PlacementProblem &problem = model.getProblem();
  const int numOps = model.getNumOps(), numResources = model.getNumResources();

  // An op's weight: its share of the whole graph's time, averaged over the
  // types (so that no type's scale dominates), and its share of the ops (so
  // that long runs of ops without work are split too).
  std::vector<double> typeTotal(numResources, 0);
  for (int l = 0; l < numOps; ++l)
    for (int t = 0; t < numResources; ++t)
      typeTotal[t] += model.opSeconds(l, t);
  std::vector<double> weight(numOps, 0);
  std::vector<int> cheapest(numOps, -1);
  for (int l = 0; l < numOps; ++l) {
    double share = 0, cheapestCost = std::numeric_limits<double>::infinity();
    for (int t = 0; t < numResources; ++t) {
      if (typeTotal[t] > 0)
        share += model.opSeconds(l, t) / typeTotal[t];
      double cost =
          model.opSeconds(l, t) * problem.cluster.resources[t].pricePerHour;
      if (model.allowed(l, t) && cost < cheapestCost) {
        cheapestCost = cost;
        cheapest[l] = t;
      }
    }
    weight[l] = 0.5 * share / numResources + 0.5 / numOps;
  }
  double maxCrossing = 0;
  for (int l = 0; l < numOps; ++l)
    maxCrossing = std::max(maxCrossing, model.crossingBytes(l));

  const double groupShare = 1.0 / std::max(1, maxGroups);
  std::vector<int> begin{0};
  int first = 0;
  while (first < numOps) {
    double accumulated = 0, bestScore = std::numeric_limits<double>::infinity();
    int end = -1;
    for (int last = first; last < numOps; ++last) {
      accumulated += weight[last];
      if (last + 1 == numOps ||
          problem.ops[last + 1].pinned != problem.ops[last].pinned) {
        end = last;
        break;
      }
      if (accumulated >= groupShare) {
        double score =
            (maxCrossing > 0 ? model.crossingBytes(last) / maxCrossing : 0) -
            (cheapest[last] != cheapest[last + 1] ? 1 : 0);
        if (score < bestScore) {
          bestScore = score;
          end = last;
        }
      }
      if (accumulated >= 2 * groupShare && end >= 0)
        break;
    }
    first = end + 1;
    begin.push_back(first);
  }
  return begin;
}

OpClustering heterps::schedule::clusterOps(const CostModel &model,
                                           int maxGroups) {
  const PlacementProblem &problem = model.getProblem();
  const int numResources = model.getNumResources();
  OpClustering clustering;
  clustering.begin = chooseCuts(model, maxGroups);

  PlacementProblem &grouped = clustering.problem;
  grouped.cluster = problem.cluster;
  grouped.batchSize = problem.batchSize;
  grouped.throughput = problem.throughput;
  grouped.samples = problem.samples;
  grouped.training = problem.training;
  grouped.microBatches = problem.microBatches;
  grouped.tables = problem.tables;

  std::vector<int> groupOf(model.getNumOps());
  for (int g = 0; g < clustering.getNumGroups(); ++g) {
    int first = clustering.begin[g], end = clustering.begin[g + 1];
    OpInfo group;
    group.name = "group" + std::to_string(g);
    group.seconds.assign(numResources, 0);
    group.pinned = problem.ops[first].pinned;
    double heaviest = -1;
    for (int l = first; l < end; ++l) {
      const OpInfo &op = problem.ops[l];
      groupOf[l] = g;
      double work = 0;
      for (int t = 0; t < numResources; ++t) {
        group.seconds[t] += model.opSeconds(l, t);
        work += model.opSeconds(l, t);
      }
      // The group reads as its heaviest op to the solvers that look at
      // kinds (the rl policy's features).
      if (work > heaviest) {
        heaviest = work;
        group.kind = op.kind;
      }
      group.forwardFlops += op.forwardFlops;
      group.backwardFlops += op.backwardFlops;
      group.forwardBytes += op.forwardBytes;
      group.backwardBytes += op.backwardBytes;
      group.parameterBytes += op.parameterBytes;
      group.embeddingBytes += op.embeddingBytes;
      group.outputBytes += op.outputBytes;
      group.residentBytes += op.residentBytes;
      for (int producer : op.operands)
        if (producer < first &&
            !llvm::is_contained(group.operands, groupOf[producer]))
          group.operands.push_back(groupOf[producer]);
    }
    grouped.ops.push_back(std::move(group));
    grouped.crossingBytes.push_back(model.crossingBytes(end - 1));
  }
  return clustering;
}

uint64_t heterps::schedule::refineStageBoundaries(const CostModel &model,
                                                  std::vector<int> &assignment,
                                                  llvm::ArrayRef<int> cuts) {
  const int numOps = model.getNumOps();
  uint64_t evaluations = 1;
  double best = model.objective(assignment, cuts);
  auto isCut = [&](int op) {
    return std::binary_search(cuts.begin(), cuts.end(), op);
  };
  std::vector<int> candidate;
  bool improved = true;
  while (improved) {
    improved = false;
    for (int boundary = 1; boundary < numOps; ++boundary) {
      if (assignment[boundary] == assignment[boundary - 1])
        continue;
      int left = assignment[boundary - 1], right = assignment[boundary];
      int leftStart = boundary - 1, rightEnd = boundary;
      while (leftStart > 0 && assignment[leftStart - 1] == left &&
             !isCut(leftStart))
        --leftStart;
      while (rightEnd + 1 < numOps && assignment[rightEnd + 1] == right &&
             !isCut(rightEnd + 1))
        ++rightEnd;
      // The boundary at `position`: ops leftStart..position-1 on the left
      // type, position..rightEnd on the right one. The ends remove a stage.
      int bestPosition = boundary;
      for (int position = leftStart; position <= rightEnd + 1; ++position) {
        if (position == boundary)
          continue;
        bool allowed = true;
        for (int l = std::min(position, boundary);
             l < std::max(position, boundary) && allowed; ++l)
          allowed = model.allowed(l, position < boundary ? right : left);
        if (!allowed)
          continue;
        candidate = assignment;
        for (int l = leftStart; l <= rightEnd; ++l)
          candidate[l] = l < position ? left : right;
        double objective = model.objective(candidate, cuts);
        ++evaluations;
        if (objective < best * (1 - 1e-12)) {
          best = objective;
          bestPosition = position;
        }
      }
      if (bestPosition != boundary) {
        for (int l = leftStart; l <= rightEnd; ++l)
          assignment[l] = l < bestPosition ? left : right;
        improved = true;
      }
    }
  }
  return evaluations;
}
