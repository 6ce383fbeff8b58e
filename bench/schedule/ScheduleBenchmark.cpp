//===- ScheduleBenchmark.cpp - Solvers against the best known plan --------===//
//
// Runs every solver on model-shaped op chains (a DLRM-like CTR model, an
// MLP, a small CNN) and on random chains and DAGs of 16 to 128 ops on 2 and
// 3 resource types, and prints for each solver the job cost divided by the
// best known cost (the exhaustive optimum where it finishes, else the best
// of dp and every other solver) and the search time. The ratios, not the
// seconds, are the result: they compare solvers run in the same process.
//
//   heterps-bench-schedule [--sizes=16,32,64,128] [--seeds=3]
//                          [--solvers=rl,dp,...] [--time-budget=S]
//                          [--large] [--max-search-ops=N] [--no-search-cuts]
//
// Every solver may cut runs of one type into several stages
// (SolverOptions::searchCuts), and the exhaustive optimum includes such
// plans; --no-search-cuts restricts every solver to the stages the types
// alone give.
//
//===----------------------------------------------------------------------===//

#include "heterps/Schedule/RandomProblem.h"
#include "heterps/Schedule/Solver.h"
#include "heterps/Support/Flags.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace heterps::schedule;

namespace {

struct Workload {
  std::string name;
  PlacementProblem problem;
};

OpInfo makeOp(std::string name, std::string kind, double batch) {
  OpInfo op;
  op.name = std::move(name);
  op.kind = std::move(kind);
  (void)batch;
  return op;
}

/// A dense layer of `in` x `out` at `batch`, forward and backward.
OpInfo denseLayer(const std::string &name, double batch, double in,
                  double out) {
  OpInfo op = makeOp(name, "heterps.gemm", batch);
  op.forwardFlops = 2 * batch * in * out;
  op.backwardFlops = 2 * op.forwardFlops;
  op.parameterBytes = 4 * in * out;
  op.forwardBytes = 4 * (batch * in + in * out + batch * out);
  op.backwardBytes = 2 * op.forwardBytes;
  op.outputBytes = 4 * batch * out;
  return op;
}

OpInfo elementwise(const std::string &name, double elements) {
  OpInfo op = makeOp(name, "heterps.relu", 0);
  op.forwardFlops = elements;
  op.backwardFlops = 2 * elements;
  op.forwardBytes = 8 * elements;
  op.backwardBytes = 16 * elements;
  op.outputBytes = 4 * elements;
  return op;
}

void chain(PlacementProblem &problem) {
  for (size_t l = 1; l < problem.ops.size(); ++l)
    if (problem.ops[l].operands.empty())
      problem.ops[l].operands.push_back(static_cast<int>(l) - 1);
}

/// DLRM-like: 26 lookups (bags of 4 ids, 64 wide), a bottom MLP over 13
/// dense features, the concatenation and a 1024-512-256-1 top MLP.
Workload ctrModel(int numResources) {
  Workload w{"ctr-dlrm", {}};
  PlacementProblem &p = w.problem;
  p.cluster = makeReferenceCluster(numResources);
  p.batchSize = 4096;
  double b = 4096;
  for (int i = 0; i < 26; ++i) {
    OpInfo op =
        makeOp("lookup" + std::to_string(i), "heterps.embedding_lookup", b);
    op.embeddingBytes = b * 4 * 64 * 4;
    op.forwardBytes = op.embeddingBytes + b * 4 * 8;
    op.backwardBytes = op.forwardBytes;
    op.forwardFlops = b * 4 * 64;
    op.backwardFlops = op.forwardFlops;
    op.outputBytes = b * 64 * 4;
    p.ops.push_back(op);
  }
  p.ops.push_back(denseLayer("bottom1", b, 13, 512));
  p.ops.push_back(elementwise("bottom1.relu", b * 512));
  p.ops.push_back(denseLayer("bottom2", b, 512, 64));
  OpInfo concat = elementwise("concat", b * 27 * 64);
  for (int i = 0; i < 26; ++i)
    concat.operands.push_back(i);
  concat.operands.push_back(28);
  p.ops.push_back(concat);
  double widths[] = {27 * 64, 1024, 512, 256, 1};
  for (int i = 0; i < 4; ++i) {
    p.ops.push_back(
        denseLayer("top" + std::to_string(i + 1), b, widths[i], widths[i + 1]));
    p.ops.push_back(
        elementwise("top" + std::to_string(i + 1) + ".act", b * widths[i + 1]));
  }
  // The bottom MLP reads the dense input, not the last lookup.
  p.ops[26].operands = {};
  chain(p);
  p.throughput = 1.0e6;
  p.samples = 4e9;
  return w;
}

/// An MLP of 8 layers of 2048 at batch 1024.
Workload mlpModel(int numResources) {
  Workload w{"mlp", {}};
  PlacementProblem &p = w.problem;
  p.cluster = makeReferenceCluster(numResources);
  p.batchSize = 1024;
  double b = 1024;
  p.ops.push_back(denseLayer("fc0", b, 784, 2048));
  p.ops.push_back(elementwise("act0", b * 2048));
  for (int i = 1; i < 8; ++i) {
    p.ops.push_back(denseLayer("fc" + std::to_string(i), b, 2048, 2048));
    p.ops.push_back(elementwise("act" + std::to_string(i), b * 2048));
  }
  p.ops.push_back(denseLayer("out", b, 2048, 10));
  chain(p);
  p.throughput = 200000;
  p.samples = 1e9;
  return w;
}

/// A small CNN: 4 conv-relu-pool blocks on 64x64 images, then two dense
/// layers.
Workload cnnModel(int numResources) {
  Workload w{"cnn", {}};
  PlacementProblem &p = w.problem;
  p.cluster = makeReferenceCluster(numResources);
  p.batchSize = 256;
  double b = 256, size = 64, channels = 3;
  for (int i = 0; i < 4; ++i) {
    double out = 32 << i;
    OpInfo conv = makeOp("conv" + std::to_string(i), "heterps.conv", b);
    double outputs = b * out * size * size;
    conv.forwardFlops = 2 * outputs * channels * 9;
    conv.backwardFlops = 2 * conv.forwardFlops;
    conv.parameterBytes = 4 * out * channels * 9;
    conv.forwardBytes =
        4 * (b * channels * size * size + outputs) + conv.parameterBytes;
    conv.backwardBytes = 2 * conv.forwardBytes;
    conv.outputBytes = 4 * outputs;
    p.ops.push_back(conv);
    p.ops.push_back(elementwise("relu" + std::to_string(i), outputs));
    OpInfo pool = elementwise("pool" + std::to_string(i), outputs);
    pool.kind = "heterps.max_pool";
    pool.outputBytes = outputs;
    p.ops.push_back(pool);
    size /= 2;
    channels = out;
  }
  p.ops.push_back(denseLayer("fc1", b, channels * size * size, 512));
  p.ops.push_back(elementwise("fc1.relu", b * 512));
  p.ops.push_back(denseLayer("fc2", b, 512, 10));
  chain(p);
  p.throughput = 20000;
  p.samples = 1e9;
  return w;
}

/// A transformer encoder of `layers` layers as ONNX exporters write it
/// (layer norm and GELU spelled out in elementwise ops, the heads split by
/// reshapes and transposes): about 51 ops per layer. Sequence 128, width
/// 768, 12 heads, feed-forward 3072, batch 64 sequences.
Workload transformerModel(int numResources, int layers) {
  Workload w{"transformer-" + std::to_string(layers), {}};
  PlacementProblem &p = w.problem;
  p.cluster = makeReferenceCluster(numResources);
  p.batchSize = 64;
  const double rows = 64.0 * 128, width = 768, heads = 12, ffn = 3072,
               seq = 128;
  const double tokens = rows * width, scores = 64.0 * heads * seq * seq;
  auto add = [&](OpInfo op, std::vector<int> operands) {
    op.operands = std::move(operands);
    p.ops.push_back(std::move(op));
    return static_cast<int>(p.ops.size()) - 1;
  };
  auto pointwise = [&](const std::string &name, double elements, int operand,
                       double parameters = 0) {
    OpInfo op = elementwise(name, elements);
    op.parameterBytes = parameters;
    return add(op, {operand});
  };
  auto view = [&](const std::string &name, double elements, int operand) {
    OpInfo op = makeOp(name, "heterps.reshape", 0);
    op.outputBytes = 4 * elements;
    return add(op, {operand});
  };
  auto gemm = [&](const std::string &name, double in, double out, int operand) {
    return pointwise(name + ".bias", rows * out,
                     add(denseLayer(name, rows, in, out), {operand}), 4 * out);
  };
  auto layerNorm = [&](const std::string &name, int x) {
    int mean = pointwise(name + ".mean", tokens, x);
    int centred = add(elementwise(name + ".sub", tokens), {x, mean});
    int square = pointwise(name + ".pow", tokens, centred);
    int variance = pointwise(name + ".var", tokens, square);
    int shifted = pointwise(name + ".eps", rows, variance);
    int deviation = pointwise(name + ".sqrt", rows, shifted);
    int normal = add(elementwise(name + ".div", tokens), {centred, deviation});
    int scaled = pointwise(name + ".gamma", tokens, normal, 4 * width);
    return pointwise(name + ".beta", tokens, scaled, 4 * width);
  };
  auto attentionMatMul = [&](const std::string &name, int a, int b,
                             double outputs) {
    OpInfo op = makeOp(name, "heterps.batch_matmul", 0);
    op.forwardFlops = 2 * scores * (width / heads);
    op.backwardFlops = 2 * op.forwardFlops;
    op.forwardBytes = 4 * (2 * tokens + outputs);
    op.backwardBytes = 2 * op.forwardBytes;
    op.outputBytes = 4 * outputs;
    return add(op, {a, b});
  };
  OpInfo embed = makeOp("embed", "heterps.embedding_lookup", 0);
  embed.embeddingBytes = tokens * 4;
  embed.forwardBytes = embed.embeddingBytes;
  embed.backwardBytes = embed.embeddingBytes;
  embed.outputBytes = tokens * 4;
  int x = add(embed, {});
  for (int layer = 0; layer < layers; ++layer) {
    std::string prefix = "layer" + std::to_string(layer) + ".";
    int normed = layerNorm(prefix + "ln1", x);
    int heads3[3];
    const char *names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; ++i) {
      int projected = gemm(prefix + names[i], width, width, normed);
      int split = view(prefix + names[i] + ".reshape", tokens, projected);
      OpInfo transpose = elementwise(prefix + names[i] + ".transpose", tokens);
      transpose.kind = "heterps.transpose";
      heads3[i] = add(transpose, {split});
    }
    int logits = attentionMatMul(prefix + "qk", heads3[0], heads3[1], scores);
    int scaled = pointwise(prefix + "scale", scores, logits);
    int exps = pointwise(prefix + "softmax.exp", scores, scaled);
    int sums = pointwise(prefix + "softmax.sum", scores, exps);
    int probs = add(elementwise(prefix + "softmax.div", scores), {exps, sums});
    int context = attentionMatMul(prefix + "av", probs, heads3[2], tokens);
    OpInfo merge = elementwise(prefix + "merge.transpose", tokens);
    merge.kind = "heterps.transpose";
    int merged = view(prefix + "merge.reshape", tokens, add(merge, {context}));
    int attended = gemm(prefix + "out", width, width, merged);
    int residual =
        add(elementwise(prefix + "residual1", tokens), {x, attended});
    int normed2 = layerNorm(prefix + "ln2", residual);
    int hidden = gemm(prefix + "ffn1", width, ffn, normed2);
    double wide = rows * ffn;
    int halved = pointwise(prefix + "gelu.div", wide, hidden);
    int erf = pointwise(prefix + "gelu.erf", wide, halved);
    int plus = pointwise(prefix + "gelu.add", wide, erf);
    int product = add(elementwise(prefix + "gelu.mul", wide), {hidden, plus});
    int gelu = pointwise(prefix + "gelu.half", wide, product);
    int output = gemm(prefix + "ffn2", ffn, width, gelu);
    x = add(elementwise(prefix + "residual2", tokens), {residual, output});
  }
  int pooled = pointwise("pool", rows, x);
  add(denseLayer("classifier", 64, width, 2), {pooled});
  for (OpInfo &op : p.ops)
    op.residentBytes = 4 * op.parameterBytes; // Adam: weights, grads, m, v
  // About nine A100s' worth at 12 layers, whatever the depth.
  p.throughput = 2000.0 * 12 / layers;
  p.samples = 1e8;
  return w;
}

struct Row {
  std::vector<double> ratios;
  std::vector<double> seconds;
  int failures = 0;
};

} // namespace

int main(int argc, char **argv) {
  std::vector<int64_t> sizeList = {16, 32, 64, 128};
  int seeds = 3;
  std::vector<std::string> solvers, known;
  for (llvm::StringRef name : getSolverNames())
    known.push_back(name.str());
  solvers = known;
  known.push_back("dp-ops");
  double timeBudget = 0;
  bool large = false, noSearchCuts = false;
  int maxSearchOps = SolverOptions().maxSearchOps;
  heterps::Flags flags(
      "heterps-bench-schedule",
      "usage: heterps-bench-schedule [options]\n\n"
      "Every solver on model-shaped op chains and random chains and "
      "DAGs: the job cost\nof its plan over the best known cost, and "
      "its search time.\n");
  flags.option("--sizes", sizeList, "N,...",
               "ops of the random instances (default 16,32,64,128; with "
               "--large 500,1000,2000)",
               2, 1 << 20);
  flags.option("--seeds", seeds, "N", "random instances per size (default 3)",
               1, 1 << 20);
  flags.choices("--solvers", solvers, known,
                "the solvers to run (default: all but dp-ops)");
  flags.option("--time-budget", timeBudget, "S",
               "seconds a solver may search (default 0: its own limit)", 0);
  flags.flag("--large", large,
             "large models (transformer stacks) and random instances");
  flags.option("--max-search-ops", maxSearchOps, "N",
               "the most ops a solver searches one by one "
               "(default 256): larger problems are searched on about this many "
               "groups of ops; 0 always searches the ops themselves",
               0);
  flags.flag("--no-search-cuts", noSearchCuts,
             "restrict every solver to the stages the types alone give");
  flags.parse(argc, argv);
  bool searchCuts = !noSearchCuts, sizesGiven = flags.given("sizes");
  if (large && !sizesGiven)
    sizeList = {500, 1000, 2000};
  std::vector<int> sizes(sizeList.begin(), sizeList.end());

  std::vector<Workload> workloads;
  for (int types = 2; types <= 3; ++types) {
    std::vector<Workload> models;
    if (large)
      models = {transformerModel(types, 12), transformerModel(types, 39)};
    else
      models = {ctrModel(types), mlpModel(types), cnnModel(types)};
    for (Workload w : models) {
      w.name += llvm::formatv(" ({0} ops)/{1}t", w.problem.ops.size(), types);
      workloads.push_back(std::move(w));
    }
    for (int size : sizes)
      for (int dag = 0; dag <= 1; ++dag)
        for (int seed = 1; seed <= seeds; ++seed) {
          RandomProblemSpec spec{size, types, dag == 1, 512};
          workloads.push_back(
              {llvm::formatv("{0}-{1}/{2}t/s{3}", dag ? "dag" : "chain", size,
                             types, seed)
                   .str(),
               makeRandomProblem(spec, 7919 * seed + size * 31 + types)});
        }
  }

  // Per group (model, or random kind and size) and solver.
  std::map<std::string, std::map<std::string, Row>> table;
  std::vector<std::string> groups;
  // rl's cost over the cost model's lower bound, minus one, per instance.
  std::vector<double> rlGaps;
  for (Workload &workload : workloads) {
    CostModel model(workload.problem);
    std::map<std::string, SolverResult> results;
    double best = INFINITY;
    for (const std::string &name : solvers) {
      SolverOptions options;
      options.timeBudgetSeconds = timeBudget;
      // The oracle where it takes seconds, not minutes.
      options.maxPlans = 2000000;
      options.maxSearchOps = maxSearchOps;
      options.searchCuts = searchCuts;
      // dp-ops: dp on the ops themselves, the reference for the grouping.
      llvm::StringRef solver = name;
      if (name == "dp-ops") {
        solver = "dp";
        options.maxSearchOps = 0;
      }
      llvm::Expected<SolverResult> result =
          solvePlacement(solver, model, options);
      if (!result) {
        llvm::consumeError(result.takeError());
        continue;
      }
      best = std::min(best, model.objective(result->evaluation));
      results[name] = *result;
    }
    std::string group = workload.name.substr(0, workload.name.rfind("/s"));
    if (table.find(group) == table.end())
      groups.push_back(group);
    for (const std::string &name : solvers) {
      Row &row = table[group][name];
      auto it = results.find(name);
      if (it == results.end() || !it->second.evaluation.feasible) {
        ++row.failures;
        continue;
      }
      row.ratios.push_back(model.objective(it->second.evaluation) / best);
      if (name == "rl" && model.lowerBoundUsd() > 0)
        rlGaps.push_back(it->second.evaluation.costUsd / model.lowerBoundUsd() -
                         1);
      row.seconds.push_back(it->second.searchSeconds);
    }
  }

  llvm::outs() << "cost / best known (geometric mean over seeds; worst in "
                  "parentheses), search seconds (mean); '-' = no plan or "
                  "infeasible\n\n| workload |";
  for (const std::string &name : solvers)
    llvm::outs() << " " << name << " |";
  llvm::outs() << "\n|---|";
  for (size_t i = 0; i < solvers.size(); ++i)
    llvm::outs() << "---|";
  llvm::outs() << "\n";
  std::vector<double> rlRatiosUpTo64;
  double rlWorstUpTo64 = 0, rlSeconds64 = 0;
  for (const std::string &group : groups) {
    llvm::outs() << "| " << group << " |";
    for (const std::string &name : solvers) {
      const Row &row = table[group][name];
      if (row.ratios.empty() || row.failures > 0) {
        llvm::outs() << " - |";
        continue;
      }
      double logSum = 0, worst = 0, seconds = 0;
      for (double r : row.ratios) {
        logSum += std::log(r);
        worst = std::max(worst, r);
      }
      for (double s : row.seconds)
        seconds += s;
      seconds /= row.seconds.size();
      double geomean = std::exp(logSum / row.ratios.size());
      llvm::outs() << llvm::formatv(" {0:f3} ({1:f3}) {2:f3}s |", geomean,
                                    worst, seconds);
      bool upTo64 = true;
      for (int size : {128})
        if (group.find("-" + std::to_string(size) + "/") != std::string::npos)
          upTo64 = false;
      if (name == "rl" && upTo64) {
        rlRatiosUpTo64.insert(rlRatiosUpTo64.end(), row.ratios.begin(),
                              row.ratios.end());
        rlWorstUpTo64 = std::max(rlWorstUpTo64, worst);
      }
      if (name == "rl" && group.find("-64/") != std::string::npos)
        rlSeconds64 = std::max(rlSeconds64, seconds);
    }
    llvm::outs() << "\n";
  }
  if (!rlRatiosUpTo64.empty() && !large) {
    double logSum = 0;
    for (double r : rlRatiosUpTo64)
      logSum += std::log(r);
    llvm::outs() << llvm::formatv(
        "\nrl up to 64 ops: geometric mean {0:f4}, worst {1:f4} over {2} "
        "instances (targets 1.02 and 1.05); slowest mean at 64 ops {3:f2} s "
        "(target 10 s)\n",
        std::exp(logSum / rlRatiosUpTo64.size()), rlWorstUpTo64,
        rlRatiosUpTo64.size(), rlSeconds64);
  }
  if (!rlGaps.empty()) {
    double sum = 0, worst = 0;
    for (double gap : rlGaps) {
      sum += gap;
      worst = std::max(worst, gap);
    }
    llvm::outs() << llvm::formatv(
        "rl gap_to_bound (cost / lower bound - 1): mean {0:f3}, worst {1:f3} "
        "over {2} instances\n",
        sum / rlGaps.size(), worst, rlGaps.size());
  }
  return 0;
}
