//===- LSTMPolicy.h - The placement policy of the rl solver -----*- C++ -*-===//
//
// An LSTM that reads the ops of a placement problem in topological order and
// emits, per op, a softmax over its actions (DESIGN.md section 4, the `rl`
// solver): a resource type, or the cut action, a new pipeline stage on the
// previous op's type. Each step sees the op's features and the resource type
// of the previous op, so that the policy can learn to keep runs of ops
// together (stages). The policy is sized for a fixed maximum number of
// resource types; types a problem lacks, and types a pin forbids, are masked
// out, so a policy trained on one problem can warm-start another with the
// same maximum. The cut action is masked out unless the problem allows cuts
// inside a run of one type (PolicyInput::allowCuts).
//
// Everything is in double precision: the gradient is checked against finite
// differences in the unit tests, and the networks are small.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_SCHEDULE_LSTMPOLICY_H
#define HETERPS_SCHEDULE_LSTMPOLICY_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <Eigen/Dense>

#include <cstdint>
#include <random>
#include <vector>

namespace heterps {
namespace schedule {

class CostModel;

/// The op categories the policy tells apart, derived from the op kind.
enum class OpCategory {
  Embedding,
  Gemm,
  Conv,
  Elementwise,
  Reduction,
  Normalization,
  Pooling,
  Loss,
  Parameter,
  Other,
};
constexpr int kNumOpCategories = 10;

/// The category of an op kind such as "heterps.gemm" (the dialect prefix is
/// optional; unknown kinds are Other).
OpCategory classifyOpKind(llvm::StringRef kind);

/// The number of resource types a policy is sized for unless a problem has
/// more.
constexpr int kDefaultMaxResources = 4;

/// The size of an op's feature vector for a policy sized for `maxResources`
/// types: the category one-hot, log-scaled work figures (FLOPs, bytes,
/// parameter bytes, embedding bytes, bytes live across the cut after the op),
/// the op's position in the order, and its time on each type relative to its
/// slowest type.
int getOpFeatureSize(int maxResources);

/// The policy's view of a problem. Per op: its features (getOpFeatureSize
/// rows, one column per op); which types it may use (maxResources rows,
/// 1 = allowed, 0 = absent from the cluster or forbidden by a pin); the
/// load of the cut before it (what a change of type there costs, as a share
/// of a stage's time budget, log-scaled); and its load on each type (its time
/// as a share of a unit's budget, which adds up to the units a stage needs).
/// `allowCuts`: whether the policy may cut a run of one type into stages.
struct PolicyInput {
  Eigen::MatrixXd features;
  Eigen::MatrixXd mask;
  Eigen::VectorXd cutLoad;
  Eigen::MatrixXd loads;
  bool allowCuts = false;
};

/// Builds the policy input for `model`'s problem. The cluster must have at
/// most `maxResources` types.
PolicyInput buildPolicyInput(const CostModel &model, int maxResources);

class LSTMPolicy {
public:
  /// How forward() picks each op's action.
  enum class Mode {
    /// Draw from the softmax.
    Sample,
    /// Take the most probable allowed action.
    Greedy,
    /// Replay the actions already in the trace (teacher forcing).
    Replay,
  };

  /// What forward() computed for a batch of action sequences, kept for
  /// backward(). Buffers are reused between calls.
  struct Trace {
    int numSteps = 0;
    int batch = 0;
    /// actions[t * batch + b]: the action chosen for op t in sequence b, a
    /// resource type or the cut action (getCutAction()).
    std::vector<int> actions;
    /// types[t * batch + b]: the resource type op t gets in sequence b (the
    /// previous op's where the action is the cut).
    std::vector<int> types;
    /// cutAllowed[t * batch + b]: whether the cut action was allowed (the
    /// problem allows cuts, t > 0, and op t may run on op t - 1's type).
    std::vector<char> cutAllowed;
    /// Per step: the plan-dependent inputs (getDynamicSize rows), the gate
    /// activations (i, f, g, o blocks of hidden rows), the cell, tanh of the
    /// cell, the hidden state, the probabilities and their logarithms (0
    /// where masked; getNumActions rows), one column per sequence.
    std::vector<Eigen::MatrixXd> dynamic, gates, cell, cellTanh, hidden, probs,
        logProbs;
    /// The input the step saw: the op's features column and the mask.
    Eigen::MatrixXd features;
    Eigen::MatrixXd mask;

    int action(int step, int sequence) const {
      return actions[static_cast<size_t>(step) * batch + sequence];
    }
    int type(int step, int sequence) const {
      return types[static_cast<size_t>(step) * batch + sequence];
    }
    /// Whether `action` was allowed for op `step` of `sequence`.
    bool allowed(int step, int sequence, int action) const {
      if (action < mask.rows())
        return mask(action, step) != 0;
      return cutAllowed[static_cast<size_t>(step) * batch + sequence] != 0;
    }
  };

  /// `featureSize` is the size of an op's feature vector (without the
  /// plan-dependent inputs, which the policy adds itself).
  LSTMPolicy(int featureSize, int hiddenSize, int maxResources);

  int getFeatureSize() const { return featureSize; }
  int getHiddenSize() const { return hiddenSize; }
  int getMaxResources() const { return maxResources; }
  /// The actions: one per resource type, then the cut.
  int getNumActions() const { return maxResources + 1; }
  /// The action that starts a new stage on the previous op's type.
  int getCutAction() const { return maxResources; }
  /// The inputs that depend on the actions taken so far, three blocks of
  /// maxResources: the previous op's type (one-hot), the same one-hot
  /// times the load of the cut before this op (what leaving the type here
  /// costs), and times the log-scaled load of the stage so far on that type
  /// (how many units it needs already).
  int getDynamicSize() const { return 3 * maxResources; }
  /// Features plus the plan-dependent inputs.
  int getInputSize() const { return featureSize + getDynamicSize(); }
  int getNumParameters() const { return static_cast<int>(params.size()); }

  /// All parameters in one vector: W_x (4H x D), W_h (4H x H), b (4H),
  /// W_out (A x H), b_out (A), W_skip (A x D), each column-major, where D is
  /// the input size, H the hidden size and A the actions (the maximum
  /// resource types, then the cut).
  /// W_skip reads the input straight into the logits, which lets the policy
  /// learn "stay on the previous type" and per-op preferences without
  /// going through the recurrence first.
  Eigen::VectorXd &getParameters() { return params; }
  const Eigen::VectorXd &getParameters() const { return params; }

  /// Draws fresh parameters: uniform in +-1/sqrt(H) for the recurrence,
  /// smaller for the output so that the first policy is close to uniform,
  /// and a forget-gate bias of 1. The logit of the previous op's type gets
  /// `stayBias` plus `cutStayBias` times the load of the cut before the op,
  /// so that the first plans sampled have few stages, cut where little data
  /// crosses (both 0: no preference); the cut action starts `stayBias`
  /// below a change of type.
  void initialize(std::mt19937_64 &rng, double stayBias = 0,
                  double cutStayBias = 0);

  /// Runs the policy over `input`'s ops for `batch` sequences. In Sample
  /// mode `rng` draws the actions (it is not used otherwise); in Replay mode
  /// `trace.actions` must already hold numOps * batch allowed actions.
  /// `trace.types` is filled in every mode.
  void forward(const PolicyInput &input, int batch, Mode mode,
               std::mt19937_64 *rng, Trace &trace) const;

  /// J = sum_{t,b} weights(t, b) * log pi(a_tb) + entropyWeight *
  /// sum_{t,b} H(pi_tb), where H is the entropy over the allowed actions.
  /// `weights` has one row per op and one column per sequence.
  double objective(const Trace &trace, const Eigen::MatrixXd &weights,
                   double entropyWeight) const;

  /// Adds dJ/dparameters (J as in objective(), full backpropagation through
  /// time) to `gradient`, which must have getNumParameters() entries.
  void backward(const Trace &trace, const Eigen::MatrixXd &weights,
                double entropyWeight, Eigen::VectorXd &gradient) const;

  /// Writes the policy to `path` in the text format:
  ///   heterps-lstm-policy 2
  ///   features <F> hidden <H> resources <R>
  ///   parameters <N>
  ///   <N numbers, one per line, in getParameters() order>
  llvm::Error save(llvm::StringRef path) const;
  /// Reads a policy saved by save() into this one; its dimensions must be
  /// this policy's. Format 1 (a policy without the cut action) is read
  /// too: its cut action gets zero weights and the smallest bias of the
  /// types.
  llvm::Error load(llvm::StringRef path);

private:
  int featureSize;
  int hiddenSize;
  int maxResources;
  Eigen::VectorXd params;
};

/// Adam (Kingma and Ba) over one parameter vector.
class AdamOptimizer {
public:
  AdamOptimizer(int numParameters, double learningRate, double beta1 = 0.9,
                double beta2 = 0.999, double epsilon = 1e-8);

  /// Moves `params` one step against `gradient` (descent: pass the negated
  /// gradient of a quantity to maximise).
  void step(Eigen::VectorXd &params, const Eigen::VectorXd &gradient);
  /// Updates the moments with `gradient` and returns the step step() would
  /// add to the parameters, for a caller that scales it.
  Eigen::VectorXd computeStep(const Eigen::VectorXd &gradient);

private:
  double learningRate, beta1, beta2, epsilon;
  double beta1Power = 1, beta2Power = 1;
  Eigen::VectorXd firstMoment, secondMoment;
};

} // namespace schedule
} // namespace heterps

#endif // HETERPS_SCHEDULE_LSTMPOLICY_H
