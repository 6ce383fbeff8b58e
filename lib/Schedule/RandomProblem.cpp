//===- RandomProblem.cpp - Random placement problems ----------------------===//

#include "heterps/Schedule/RandomProblem.h"
#include "heterps/Schedule/CostModel.h"

#include <algorithm>
#include <cmath>
#include <random>

using namespace heterps::schedule;

Cluster heterps::schedule::makeReferenceCluster(int numResources) {
  // The figures of examples/clusters/aws-c6i-p3-p4d.json.
  Cluster cluster;
  cluster.name = numResources == 2 ? "reference-2" : "reference-3";
  cluster.resources.push_back(
      {"c6i.4xlarge", ResourceKind::CPU, 1792, 40, 32, 0.68, 64, 2});
  if (numResources >= 3)
    cluster.resources.push_back(
        {"v100-16g", ResourceKind::GPU, 15700, 900, 16, 3.06, 16, 6});
  cluster.resources.push_back(
      {"a100-40g", ResourceKind::GPU, 19500, 1555, 40, 4.096, 16, 6});
  size_t n = cluster.resources.size();
  cluster.links.assign(n, std::vector<Link>(n, Link{1.5625, 50}));
  cluster.links[n - 1][n - 1] = Link{300, 5};
  cluster.psLinks.assign(n, Link{1.5625, 100});
  cluster.psLinks[n - 1] = Link{6.25, 100};
  if (numResources >= 3) {
    cluster.links[1][1] = Link{1.25, 50};
    cluster.psLinks[1] = Link{1.25, 100};
  }
  return cluster;
}

PlacementProblem
heterps::schedule::makeRandomProblem(const RandomProblemSpec &spec,
                                     uint64_t seed) {
  std::mt19937_64 engine(seed);
  auto uniform = [&](double low, double high) {
    return low + (high - low) * ((engine() >> 11) * (1.0 / 9007199254740992.0));
  };
  auto logUniform = [&](double low, double high) {
    return std::exp(uniform(std::log(low), std::log(high)));
  };

  PlacementProblem problem;
  problem.cluster = makeReferenceCluster(spec.numResources);
  problem.batchSize = spec.batchSize;
  problem.samples = 1e9;
  problem.training = true;
  double batch = static_cast<double>(spec.batchSize);
  for (int l = 0; l < spec.numOps; ++l) {
    OpInfo op;
    double kind = uniform(0, 1);
    // CTR models start with lookups and end with the dense MLP: make
    // lookups likelier early in the order.
    double position = static_cast<double>(l) / std::max(1, spec.numOps - 1);
    if (kind < 0.45 * (1 - position) + 0.05) {
      op.kind = "heterps.embedding_lookup";
      double dim = std::round(logUniform(8, 128));
      double ids = std::round(logUniform(1, 64));
      op.embeddingBytes = batch * ids * dim * 4;
      op.forwardBytes = op.embeddingBytes + batch * ids * 8;
      op.backwardBytes = op.forwardBytes;
      op.forwardFlops = batch * ids * dim;
      op.backwardFlops = op.forwardFlops;
      op.outputBytes = batch * dim * 4;
    } else if (kind < 0.75) {
      op.kind = "heterps.gemm";
      double in = std::round(logUniform(64, 2048));
      double out = std::round(logUniform(64, 2048));
      op.forwardFlops = 2 * batch * in * out;
      op.backwardFlops = 2 * op.forwardFlops;
      op.parameterBytes = in * out * 4;
      op.forwardBytes = (batch * in + in * out + batch * out) * 4;
      op.backwardBytes = 2 * op.forwardBytes;
      op.outputBytes = batch * out * 4;
    } else {
      op.kind = "heterps.relu";
      double width = std::round(logUniform(64, 4096));
      op.forwardFlops = batch * width;
      op.backwardFlops = 2 * op.forwardFlops;
      op.forwardBytes = 2 * batch * width * 4;
      op.backwardBytes = 2 * op.forwardBytes;
      op.outputBytes = batch * width * 4;
    }
    op.name = op.kind.substr(op.kind.find('.') + 1) + "_" + std::to_string(l);
    if (l > 0)
      op.operands.push_back(l - 1);
    if (spec.dag && l > 1 && uniform(0, 1) < 0.3) {
      int extra = static_cast<int>(engine() % static_cast<uint64_t>(l - 1));
      op.operands.push_back(extra);
    }
    problem.ops.push_back(op);
  }

  // The target: a multiple of what one unit of the fastest type sustains on
  // the whole model, so that plans need several units and the cheap and the
  // fast types both have a part to play.
  problem.throughput = 1e-9;
  CostModel probe(problem);
  int fastest = static_cast<int>(problem.cluster.resources.size()) - 1;
  double oneUnit =
      probe.evaluateStage(0, spec.numOps - 1, fastest, -1).throughput;
  problem.throughput = oneUnit * uniform(0.5, 4);
  return problem;
}
