//===- LSTMPolicy.cpp - The placement policy of the rl solver -------------===//

#include "heterps/Schedule/LSTMPolicy.h"
#include "heterps/Schedule/CostModel.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdlib>
#include <limits>

using namespace heterps::schedule;
using Eigen::MatrixXd;
using Eigen::VectorXd;

//===----------------------------------------------------------------------===//
// Features
//===----------------------------------------------------------------------===//

OpCategory heterps::schedule::classifyOpKind(llvm::StringRef kind) {
  // Other dialects' kinds ("foo.matmul") classify by their last component.
  size_t dot = kind.rfind('.');
  llvm::StringRef name =
      dot == llvm::StringRef::npos ? kind : kind.substr(dot + 1);
  // Loss kinds name other categories ("softmax_ce_loss"), so they go first.
  if (name.contains("loss"))
    return OpCategory::Loss;
  if (name.contains("embedding") || name.contains("lookup") ||
      name.contains("combiner") || name.starts_with("ps_"))
    return OpCategory::Embedding;
  if (name.contains("conv"))
    return OpCategory::Conv;
  if (name.contains("gemm") || name.contains("matmul") ||
      name.contains("linear") || name.contains("dense"))
    return OpCategory::Gemm;
  if (name.contains("pool"))
    return OpCategory::Pooling;
  if (name.contains("norm") || name.contains("softmax"))
    return OpCategory::Normalization;
  if (name.starts_with("reduce"))
    return OpCategory::Reduction;
  return llvm::StringSwitch<OpCategory>(name)
      .Cases({"param", "load_param", "constant", "init"}, OpCategory::Parameter)
      .Cases({"add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log",
              "sqrt", "relu", "sigmoid", "tanh", "erf", "leaky_relu", "clip",
              "dropout", "gelu"},
             OpCategory::Elementwise)
      .Default(OpCategory::Other);
}

/// log1p of the figures brings them to roughly [0, 1] once divided by this
/// (log1p(1e11) is about 25).
static constexpr double kLogScale = 25;
/// Category one-hot, six work figures, the position, two cut loads.
static constexpr int kFixedFeatures = kNumOpCategories + 6 + 1 + 2;

int heterps::schedule::getOpFeatureSize(int maxResources) {
  return kFixedFeatures + 3 * maxResources;
}

PolicyInput heterps::schedule::buildPolicyInput(const CostModel &model,
                                                int maxResources) {
  const PlacementProblem &problem = model.getProblem();
  const Cluster &cluster = problem.cluster;
  int numOps = model.getNumOps(), numResources = model.getNumResources();
  assert(numResources <= maxResources && "policy too small for the cluster");
  // Seconds per batch the throughput target allows each stage: loads are
  // times in this unit, so that "needs more than one unit" reads the same
  // on every problem.
  double budget = static_cast<double>(problem.batchSize) / problem.throughput;
  double directions = problem.training ? 2 : 1;
  double slowestLink = std::numeric_limits<double>::infinity();
  for (int a = 0; a < numResources; ++a)
    for (int b = 0; b < numResources; ++b)
      if (a != b)
        slowestLink = std::min(slowestLink, cluster.links[a][b].gbps);
  auto cutLoad = [&](int op) {
    if (op < 0 || !std::isfinite(slowestLink) || !(budget > 0))
      return 0.0;
    double x =
        directions * model.crossingBytes(op) / (slowestLink * 1e9) / budget;
    return std::log1p(x);
  };

  PolicyInput input;
  input.features = MatrixXd::Zero(getOpFeatureSize(maxResources), numOps);
  input.mask = MatrixXd::Zero(maxResources, numOps);
  input.cutLoad = VectorXd::Zero(numOps);
  input.loads = MatrixXd::Zero(maxResources, numOps);
  for (int l = 0; l < numOps; ++l) {
    input.cutLoad(l) = cutLoad(l - 1);
    const OpInfo &op = problem.ops[l];
    auto column = input.features.col(l);
    column(static_cast<int>(classifyOpKind(op.kind))) = 1;
    double flops = op.forwardFlops + (problem.training ? op.backwardFlops : 0);
    double bytes = op.forwardBytes + (problem.training ? op.backwardBytes : 0);
    int row = kNumOpCategories;
    // Choosing a new type for op l cuts before it: the policy sees both
    // cuts next to the op.
    for (double figure :
         {flops, bytes, op.parameterBytes, op.embeddingBytes,
          model.crossingBytes(l), l > 0 ? model.crossingBytes(l - 1) : 0.0})
      column(row++) = std::log1p(figure) / kLogScale;
    column(row++) = numOps > 1 ? static_cast<double>(l) / (numOps - 1) : 0;
    column(row++) = cutLoad(l);
    column(row++) = cutLoad(l - 1);
    // Relative time and relative money per type: what the op prefers,
    // independent of the problem's scale; and the load, the share of a
    // unit's budget the op takes, which adds up to the units a stage needs.
    double maxSeconds = 0, maxDollars = 0;
    for (int t = 0; t < numResources; ++t) {
      double seconds = model.opSeconds(l, t);
      maxSeconds = std::max(maxSeconds, seconds);
      maxDollars =
          std::max(maxDollars, seconds * cluster.resources[t].pricePerHour);
    }
    for (int t = 0; t < numResources; ++t) {
      double seconds = model.opSeconds(l, t);
      double dollars = seconds * cluster.resources[t].pricePerHour;
      column(row + t) = maxSeconds > 0 ? seconds / maxSeconds : 0;
      column(row + maxResources + t) =
          maxDollars > 0 ? dollars / maxDollars : 0;
      input.loads(t, l) = budget > 0 ? seconds / budget : 0;
      column(row + 2 * maxResources + t) = std::log1p(input.loads(t, l));
      input.mask(t, l) = model.allowed(l, t) ? 1 : 0;
    }
  }
  return input;
}

//===----------------------------------------------------------------------===//
// The policy
//===----------------------------------------------------------------------===//

namespace {
/// Where each parameter block starts in the flat vector, for a policy with
/// `numActions` outputs (format 1 had no cut action: one per type).
struct Layout {
  int F, D, H, R, A;
  Eigen::Index wx, wh, b, wo, bo, ws, size;

  Layout(int featureSize, int hiddenSize, int maxResources, int numActions)
      : F(featureSize), D(featureSize + 3 * maxResources), H(hiddenSize),
        R(maxResources), A(numActions) {
    Eigen::Index G = 4 * Eigen::Index(H);
    wx = 0;
    wh = wx + G * D;
    b = wh + G * H;
    wo = b + G;
    bo = wo + Eigen::Index(A) * H;
    ws = bo + A;
    size = ws + Eigen::Index(A) * D;
  }
  Layout(int featureSize, int hiddenSize, int maxResources)
      : Layout(featureSize, hiddenSize, maxResources, maxResources + 1) {}
};

template <typename Vector> struct Views {
  using Scalar =
      std::conditional_t<std::is_const_v<Vector>, const double, double>;
  using Mat = Eigen::Map<
      std::conditional_t<std::is_const_v<Vector>, const MatrixXd, MatrixXd>>;
  using Vec = Eigen::Map<
      std::conditional_t<std::is_const_v<Vector>, const VectorXd, VectorXd>>;
  Mat wx, wh, wo, ws;
  Vec b, bo;

  Views(Vector &v, const Layout &layout)
      : wx(v.data() + layout.wx, 4 * layout.H, layout.D),
        wh(v.data() + layout.wh, 4 * layout.H, layout.H),
        wo(v.data() + layout.wo, layout.A, layout.H),
        ws(v.data() + layout.ws, layout.A, layout.D),
        b(v.data() + layout.b, 4 * layout.H),
        bo(v.data() + layout.bo, layout.A) {}
};
} // namespace

/// A uniform draw in [0, 1) that does not depend on the standard library's
/// distributions, so that a seed gives the same plan everywhere.
static double uniform01(std::mt19937_64 &rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

static double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

LSTMPolicy::LSTMPolicy(int featureSize, int hiddenSize, int maxResources)
    : featureSize(featureSize), hiddenSize(hiddenSize),
      maxResources(maxResources) {
  assert(featureSize > 0 && hiddenSize > 0 && maxResources > 0);
  params = VectorXd::Zero(Layout(featureSize, hiddenSize, maxResources).size);
}

void LSTMPolicy::initialize(std::mt19937_64 &rng, double stayBias,
                            double cutStayBias) {
  Layout layout(featureSize, hiddenSize, maxResources);
  Views<VectorXd> p(params, layout);
  double scale = 1 / std::sqrt(static_cast<double>(hiddenSize));
  auto fill = [&](auto &&block, double range) {
    for (Eigen::Index j = 0; j < block.cols(); ++j)
      for (Eigen::Index i = 0; i < block.rows(); ++i)
        block(i, j) = (2 * uniform01(rng) - 1) * range;
  };
  fill(p.wx, scale);
  fill(p.wh, scale);
  p.b.setZero();
  // A forget bias of 1 lets the cell carry context from the start.
  p.b.segment(hiddenSize, hiddenSize).setConstant(1);
  // Small output weights: the first policy is nearly uniform, so the first
  // iterations explore.
  fill(p.wo, 0.1 * scale);
  p.bo.setZero();
  fill(p.ws, 0.1 * scale);
  // The dynamic inputs start with the previous type's one-hot and the
  // one-hot times the cut load: their columns into the same type's logit.
  for (int r = 0; r < maxResources; ++r) {
    p.ws(r, featureSize + r) += stayBias;
    p.ws(r, featureSize + maxResources + r) += cutStayBias;
  }
  // A cut pays for a transfer like a change of type; it pays back where the
  // stage so far needs many units (their all-reduce, their limit): the
  // stage's load raises it.
  for (int r = 0; r < maxResources; ++r)
    p.ws(getCutAction(), featureSize + 2 * maxResources + r) += stayBias;
}

void LSTMPolicy::forward(const PolicyInput &input, int batch, Mode mode,
                         std::mt19937_64 *rng, Trace &trace) const {
  Layout layout(featureSize, hiddenSize, maxResources);
  Views<const VectorXd> p(params, layout);
  const int L = static_cast<int>(input.features.cols());
  const int H = hiddenSize, R = maxResources, F = featureSize;
  const int A = getNumActions(), cut = getCutAction();
  assert(input.features.rows() == F && input.mask.rows() == R &&
         input.mask.cols() == L && input.cutLoad.size() == L &&
         input.loads.rows() == R && input.loads.cols() == L &&
         "input does not fit the policy");
  assert((mode != Mode::Sample || rng) && "sampling needs a generator");

  trace.numSteps = L;
  trace.batch = batch;
  const size_t size = static_cast<size_t>(L) * batch;
  if (mode == Mode::Replay)
    assert(trace.actions.size() == size);
  else
    trace.actions.assign(size, 0);
  trace.types.assign(size, 0);
  trace.cutAllowed.assign(size, 0);
  for (auto *buffers :
       {&trace.dynamic, &trace.gates, &trace.cell, &trace.cellTanh,
        &trace.hidden, &trace.probs, &trace.logProbs})
    buffers->resize(L);
  trace.features = input.features;
  trace.mask = input.mask;

  const int Y = getDynamicSize();
  MatrixXd zeros = MatrixXd::Zero(H, batch);
  VectorXd fixedGate(4 * H), fixedLogit(A);
  // The load of the current stage (the ops since the last change of type or
  // cut, up to the previous op) of each sequence.
  std::vector<double> stageLoad(batch, 0.0);
  for (int t = 0; t < L; ++t) {
    const MatrixXd &hPrev = t > 0 ? trace.hidden[t - 1] : zeros;
    const MatrixXd &cPrev = t > 0 ? trace.cell[t - 1] : zeros;
    MatrixXd &dynamic = trace.dynamic[t];
    dynamic.setZero(Y, batch);
    if (t > 0)
      for (int b = 0; b < batch; ++b) {
        int previous = trace.type(t - 1, b);
        dynamic(previous, b) = 1;
        dynamic(R + previous, b) = input.cutLoad(t);
        dynamic(2 * R + previous, b) = std::log1p(stageLoad[b]);
        trace.cutAllowed[static_cast<size_t>(t) * batch + b] =
            input.allowCuts && input.mask(previous, t) != 0;
      }
    // The features are the same for every sequence; only the inputs that
    // depend on the plan differ.
    fixedGate.noalias() = p.wx.leftCols(F) * input.features.col(t);
    fixedGate += p.b;
    fixedLogit.noalias() = p.ws.leftCols(F) * input.features.col(t);
    fixedLogit += p.bo;

    MatrixXd &gates = trace.gates[t];
    gates.resize(4 * H, batch);
    gates.noalias() = p.wh * hPrev;
    gates.noalias() += p.wx.rightCols(Y) * dynamic;
    gates.colwise() += fixedGate;
    auto gi = gates.topRows(H).array();
    auto gf = gates.middleRows(H, H).array();
    auto gg = gates.middleRows(2 * H, H).array();
    auto go = gates.bottomRows(H).array();
    gi = gi.unaryExpr(&sigmoid);
    gf = gf.unaryExpr(&sigmoid);
    gg = gg.tanh();
    go = go.unaryExpr(&sigmoid);

    MatrixXd &cell = trace.cell[t];
    cell = (gf * cPrev.array() + gi * gg).matrix();
    trace.cellTanh[t] = cell.array().tanh().matrix();
    trace.hidden[t] = (go * trace.cellTanh[t].array()).matrix();

    MatrixXd &probs = trace.probs[t];
    MatrixXd &logProbs = trace.logProbs[t];
    probs.resize(A, batch);
    probs.noalias() = p.wo * trace.hidden[t];
    probs.noalias() += p.ws.rightCols(Y) * dynamic;
    probs.colwise() += fixedLogit;
    logProbs.resize(A, batch);
    for (int b = 0; b < batch; ++b) {
      auto allowed = [&](int r) { return trace.allowed(t, b, r); };
      auto logits = probs.col(b);
      // Softmax over the allowed actions only; masked ones get probability
      // 0 (and a log-probability of 0 that nothing reads).
      double top = -std::numeric_limits<double>::infinity();
      for (int r = 0; r < A; ++r)
        if (allowed(r))
          top = std::max(top, logits(r));
      assert(std::isfinite(top) && "an op with no allowed resource type");
      double sum = 0;
      for (int r = 0; r < A; ++r)
        if (allowed(r))
          sum += std::exp(logits(r) - top);
      double logSum = top + std::log(sum);
      for (int r = 0; r < A; ++r) {
        if (allowed(r)) {
          logProbs(r, b) = logits(r) - logSum;
          probs(r, b) = std::exp(logProbs(r, b));
        } else {
          logProbs(r, b) = 0;
          probs(r, b) = 0;
        }
      }

      int &action = trace.actions[static_cast<size_t>(t) * batch + b];
      int last = -1;
      for (int r = 0; r < A; ++r)
        if (allowed(r))
          last = r;
      if (mode == Mode::Sample) {
        double u = uniform01(*rng), cumulative = 0;
        action = last;
        for (int r = 0; r < A; ++r) {
          if (!allowed(r))
            continue;
          cumulative += probs(r, b);
          if (u < cumulative) {
            action = r;
            break;
          }
        }
      } else if (mode == Mode::Greedy) {
        action = last;
        for (int r = 0; r < A; ++r)
          if (allowed(r) && probs(r, b) > probs(action, b))
            action = r;
      } else {
        assert(action >= 0 && action < A && allowed(action) &&
               "replayed action not allowed");
      }
      int previous = t > 0 ? trace.type(t - 1, b) : -1;
      int type = action == cut ? previous : action;
      trace.types[static_cast<size_t>(t) * batch + b] = type;
      bool sameStage = action == previous;
      stageLoad[b] = (sameStage ? stageLoad[b] : 0.0) + input.loads(type, t);
    }
  }
}

/// The entropy of column `b` of `probs` over the allowed actions.
static double entropy(const MatrixXd &probs, const MatrixXd &logProbs, int b) {
  double sum = 0;
  for (Eigen::Index r = 0; r < probs.rows(); ++r)
    sum -= probs(r, b) * logProbs(r, b);
  return sum;
}

double LSTMPolicy::objective(const Trace &trace, const MatrixXd &weights,
                             double entropyWeight) const {
  double sum = 0;
  for (int t = 0; t < trace.numSteps; ++t)
    for (int b = 0; b < trace.batch; ++b)
      sum += weights(t, b) * trace.logProbs[t](trace.action(t, b), b) +
             entropyWeight * entropy(trace.probs[t], trace.logProbs[t], b);
  return sum;
}

void LSTMPolicy::backward(const Trace &trace, const MatrixXd &weights,
                          double entropyWeight, VectorXd &gradient) const {
  Layout layout(featureSize, hiddenSize, maxResources);
  assert(gradient.size() == layout.size);
  Views<const VectorXd> p(params, layout);
  Views<VectorXd> g(gradient, layout);
  const int L = trace.numSteps, B = trace.batch;
  const int H = hiddenSize, A = getNumActions(), F = featureSize;
  const int Y = getDynamicSize();

  MatrixXd zeros = MatrixXd::Zero(H, B);
  MatrixXd dHiddenNext = MatrixXd::Zero(H, B), dCellNext = MatrixXd::Zero(H, B);
  MatrixXd dLogits(A, B), dHidden(H, B), dCell(H, B), dGates(4 * H, B);
  VectorXd rowSum;
  for (int t = L - 1; t >= 0; --t) {
    const MatrixXd &probs = trace.probs[t];
    const MatrixXd &logProbs = trace.logProbs[t];
    // d/dz_r of log pi(a) is [r = a] - pi_r; of the entropy,
    // -pi_r (log pi_r + H). Masked actions have pi_r = 0: no gradient.
    for (int b = 0; b < B; ++b) {
      double h = entropy(probs, logProbs, b);
      int action = trace.action(t, b);
      for (int r = 0; r < A; ++r) {
        if (!trace.allowed(t, b, r)) {
          dLogits(r, b) = 0;
          continue;
        }
        dLogits(r, b) =
            weights(t, b) * ((r == action ? 1.0 : 0.0) - probs(r, b)) -
            entropyWeight * probs(r, b) * (logProbs(r, b) + h);
      }
    }
    g.wo.noalias() += dLogits * trace.hidden[t].transpose();
    rowSum = dLogits.rowwise().sum();
    g.bo += rowSum;
    g.ws.leftCols(F).noalias() += rowSum * trace.features.col(t).transpose();
    g.ws.rightCols(Y).noalias() += dLogits * trace.dynamic[t].transpose();

    dHidden = dHiddenNext;
    dHidden.noalias() += p.wo.transpose() * dLogits;

    const MatrixXd &gates = trace.gates[t];
    auto gi = gates.topRows(H).array();
    auto gf = gates.middleRows(H, H).array();
    auto gg = gates.middleRows(2 * H, H).array();
    auto go = gates.bottomRows(H).array();
    auto cellTanh = trace.cellTanh[t].array();
    const MatrixXd &cPrev = t > 0 ? trace.cell[t - 1] : zeros;

    dCell = (dCellNext.array() + dHidden.array() * go * (1 - cellTanh.square()))
                .matrix();
    dGates.topRows(H) = (dCell.array() * gg * gi * (1 - gi)).matrix();
    dGates.middleRows(H, H) =
        (dCell.array() * cPrev.array() * gf * (1 - gf)).matrix();
    dGates.middleRows(2 * H, H) =
        (dCell.array() * gi * (1 - gg.square())).matrix();
    dGates.bottomRows(H) =
        (dHidden.array() * cellTanh * go * (1 - go)).matrix();

    rowSum = dGates.rowwise().sum();
    g.b += rowSum;
    g.wx.leftCols(F).noalias() += rowSum * trace.features.col(t).transpose();
    g.wx.rightCols(Y).noalias() += dGates * trace.dynamic[t].transpose();
    if (t > 0)
      g.wh.noalias() += dGates * trace.hidden[t - 1].transpose();
    dHiddenNext.noalias() = p.wh.transpose() * dGates;
    dCellNext = (dCell.array() * gf).matrix();
  }
}

//===----------------------------------------------------------------------===//
// Saving and loading
//===----------------------------------------------------------------------===//

static constexpr llvm::StringLiteral kMagic = "heterps-lstm-policy";
static constexpr int kVersion = 2;
/// Format 1: the same blocks without the cut action's row.
static constexpr int kVersionWithoutCuts = 1;

llvm::Error LSTMPolicy::save(llvm::StringRef path) const {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return llvm::createStringError(ec, "cannot write policy file '%s': %s",
                                   path.str().c_str(), ec.message().c_str());
  os << kMagic << ' ' << kVersion << '\n'
     << "features " << featureSize << " hidden " << hiddenSize << " resources "
     << maxResources << '\n'
     << "parameters " << params.size() << '\n';
  // 17 significant digits round-trip a double exactly.
  for (Eigen::Index i = 0; i < params.size(); ++i)
    os << llvm::format("%.17g", params(i)) << '\n';
  os.close();
  if (os.has_error())
    return llvm::createStringError(
        os.error(), "cannot write policy file '%s': %s", path.str().c_str(),
        os.error().message().c_str());
  return llvm::Error::success();
}

llvm::Error LSTMPolicy::load(llvm::StringRef path) {
  auto fail = [&](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "policy file '" + path + "': " + message);
  };
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  llvm::SmallVector<llvm::StringRef, 0> tokens;
  (*buffer)->getBuffer().split(tokens, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef &token : tokens)
    token = token.trim();
  llvm::erase_if(tokens, [](llvm::StringRef token) { return token.empty(); });

  llvm::SmallVector<llvm::StringRef, 8> words;
  auto header = [&](size_t line) {
    words.clear();
    if (line < tokens.size())
      tokens[line].split(words, ' ', -1, /*KeepEmpty=*/false);
  };
  header(0);
  int version = 0;
  if (words.size() != 2 || words[0] != kMagic ||
      words[1].getAsInteger(10, version))
    return fail("does not start with '" + kMagic + " <version>'");
  if (version != kVersion && version != kVersionWithoutCuts)
    return fail(llvm::formatv("has format version {0}, expected {1} or {2}",
                              version, kVersionWithoutCuts, kVersion));
  header(1);
  int features = 0, hidden = 0, resources = 0;
  if (words.size() != 6 || words[0] != "features" ||
      words[1].getAsInteger(10, features) || words[2] != "hidden" ||
      words[3].getAsInteger(10, hidden) || words[4] != "resources" ||
      words[5].getAsInteger(10, resources))
    return fail("line 2 is not 'features <F> hidden <H> resources <R>'");
  if (features != featureSize || hidden != hiddenSize ||
      resources != maxResources)
    return fail(llvm::formatv(
        "has dimensions features {0}, hidden {1}, resources {2}; expected "
        "features {3}, hidden {4}, resources {5}",
        features, hidden, resources, featureSize, hiddenSize, maxResources));
  header(2);
  long long count = 0;
  if (words.size() != 2 || words[0] != "parameters" ||
      words[1].getAsInteger(10, count))
    return fail("line 3 is not 'parameters <N>'");
  Layout layout(featureSize, hiddenSize, maxResources,
                version == kVersion ? getNumActions() : maxResources);
  if (count != layout.size)
    return fail(llvm::formatv("declares {0} parameters, expected {1}", count,
                              layout.size));
  if (tokens.size() != static_cast<size_t>(count) + 3)
    return fail(llvm::formatv("has {0} parameter lines, expected {1}",
                              tokens.size() - 3, count));
  VectorXd values(layout.size);
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    double value = 0;
    if (tokens[i + 3].getAsDouble(value) || !std::isfinite(value))
      return fail(llvm::formatv("parameter {0} ('{1}') is not a finite number",
                                i, tokens[i + 3]));
    values(i) = value;
  }
  if (version == kVersion) {
    params = std::move(values);
    return llvm::Error::success();
  }
  Layout current(featureSize, hiddenSize, maxResources);
  VectorXd converted = VectorXd::Zero(current.size);
  Views<const VectorXd> from(values, layout);
  Views<VectorXd> to(converted, current);
  to.wx = from.wx;
  to.wh = from.wh;
  to.b = from.b;
  to.wo.topRows(maxResources) = from.wo;
  to.bo.head(maxResources) = from.bo;
  to.ws.topRows(maxResources) = from.ws;
  to.bo(getCutAction()) = from.bo.minCoeff();
  params = std::move(converted);
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Adam
//===----------------------------------------------------------------------===//

AdamOptimizer::AdamOptimizer(int numParameters, double learningRate,
                             double beta1, double beta2, double epsilon)
    : learningRate(learningRate), beta1(beta1), beta2(beta2), epsilon(epsilon),
      firstMoment(VectorXd::Zero(numParameters)),
      secondMoment(VectorXd::Zero(numParameters)) {}

void AdamOptimizer::step(VectorXd &params, const VectorXd &gradient) {
  assert(params.size() == gradient.size());
  params += computeStep(gradient);
}

VectorXd AdamOptimizer::computeStep(const VectorXd &gradient) {
  assert(gradient.size() == firstMoment.size());
  beta1Power *= beta1;
  beta2Power *= beta2;
  firstMoment = beta1 * firstMoment + (1 - beta1) * gradient;
  secondMoment = beta2 * secondMoment + (1 - beta2) * gradient.cwiseAbs2();
  double stepSize = learningRate * std::sqrt(1 - beta2Power) / (1 - beta1Power);
  return (-stepSize * firstMoment.array() /
          (secondMoment.array().sqrt() + epsilon))
      .matrix();
}
