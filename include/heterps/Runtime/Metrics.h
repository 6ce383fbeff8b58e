//===- Metrics.h - Training and evaluation metrics --------------*- C++ -*-===//
//
// What CTR and classification users read off a run: the mean loss, and of
// the predictions against the labels, for binary labels the AUC, log loss,
// normalized entropy and calibration, for class labels the accuracy. The
// AUC is computed from histograms of the predicted probability (fixed
// buckets, ties within a bucket counted half, as Paddle's and TF's
// bucketed AUCs do), so the metrics of several workers merge exactly by
// adding their counts, and a window of any size takes the same memory.
//
//===----------------------------------------------------------------------===//

#ifndef HETERPS_RUNTIME_METRICS_H
#define HETERPS_RUNTIME_METRICS_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace heterps::runtime {

class Metrics {
public:
  /// Buckets of the predicted probability for the AUC: its error is at
  /// most half the share of positive-negative pairs that fall into one
  /// bucket.
  static constexpr int kAUCBuckets = 1 << 14;

  /// With `logits`, binary predictions are logits (a model trained with
  /// from-logits bce): the probability is their sigmoid.
  explicit Metrics(bool logits = false) : logits(logits) {}

  void addLoss(double loss, int64_t samples);
  /// Binary labels (f32 [B, 1] against one score per row) or class labels
  /// (i64 [B] against a row of class scores). Rows whose `present` flag is
  /// 0 are left out (empty: every row); non-finite predictions are counted
  /// apart and left out.
  void add(const Tensor &prediction, const Tensor &label,
           const std::vector<char> &present = {});
  /// Adds another window's counts (another worker's): the merged metrics
  /// are those of all the examples.
  void merge(const Metrics &other);
  /// Merges the prediction counts of every process of a job: `sum` adds
  /// an array of doubles element-wise across the processes in place (an
  /// all-reduce), and every process calls this at the same point. The loss
  /// stays this process's: a job's steps already report the job's loss.
  void sumAcrossProcesses(const std::function<void(double *, size_t)> &sum);
  void reset();

  double meanLoss() const { return samples ? lossSum / samples : 0.0; }

  /// Binary examples seen, of them positive (label > 0.5).
  int64_t binaryExamples() const { return positives + negatives; }
  int64_t positiveExamples() const { return positives; }
  bool hasAUC() const { return binaryExamples() > 0; }
  /// 0.5 when one class is missing.
  double auc() const;
  /// The mean binary cross-entropy of the probabilities (clamped to
  /// [1e-7, 1 - 1e-7]).
  double logLoss() const;
  /// Whether both classes were seen, which normalizedEntropy() and
  /// calibration() need.
  bool hasBothClasses() const { return positives > 0 && negatives > 0; }
  /// The log loss over the entropy of the observed positive rate: below 1
  /// the model beats always predicting that rate.
  double normalizedEntropy() const;
  /// Predicted CTR over observed CTR (1 is calibrated).
  double calibration() const;
  /// Predictions that were NaN or infinite, left out of the metrics.
  int64_t nonFinitePredictions() const { return nonFinite; }

  /// Examples with a label, binary or class.
  int64_t examples() const { return binaryExamples() + counted; }

  bool hasAccuracy() const { return counted > 0; }
  double accuracy() const { return counted ? double(correct) / counted : 0; }

private:
  /// The histograms, zeroed, unless they exist.
  void allocateHistograms();

  bool logits = false;
  double lossSum = 0;
  int64_t samples = 0;
  /// Histograms of the probability by label, allocated with the first
  /// binary example.
  std::vector<int64_t> positiveBuckets, negativeBuckets;
  int64_t positives = 0, negatives = 0, nonFinite = 0;
  double logLossSum = 0, probabilitySum = 0;
  int64_t correct = 0, counted = 0;
};

/// "auc 0.7412  logloss 0.4521  ne 0.8833  calibration 1.021",
/// "accuracy 0.8610", or "" when there is neither.
std::string metricsText(const Metrics &metrics);

/// The metrics as JSON members, without braces:
/// `"auc": 0.7412, "logloss": 0.4521, ...` (only those defined).
std::string metricsJSON(const Metrics &metrics);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_METRICS_H
