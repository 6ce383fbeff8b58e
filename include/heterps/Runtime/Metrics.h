//===- Metrics.h - Loss, AUC and accuracy over a window ---------*- C++ -*-===//

#ifndef HETERPS_RUNTIME_METRICS_H
#define HETERPS_RUNTIME_METRICS_H

#include "heterps/Runtime/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace heterps::runtime {

/// Accumulates predictions against labels: binary labels give the AUC of
/// the scores, class labels the accuracy of the arg-max.
class Metrics {
public:
  void addLoss(double loss, int64_t samples);
  /// Rows whose `present` flag is 0 are left out (empty: every row).
  void add(const Tensor &prediction, const Tensor &label,
           const std::vector<char> &present = {});
  void reset();

  double meanLoss() const { return samples ? lossSum / samples : 0.0; }
  bool hasAUC() const { return !scores.empty(); }
  double auc() const;
  bool hasAccuracy() const { return counted > 0; }
  double accuracy() const { return counted ? double(correct) / counted : 0; }

private:
  double lossSum = 0;
  int64_t samples = 0;
  std::vector<std::pair<float, float>> scores;
  int64_t correct = 0, counted = 0;
};

/// Area under the ROC curve of (score, label) pairs, ties counted half.
double computeAUC(std::vector<std::pair<float, float>> scores);

/// "auc 0.7412", "accuracy 0.8610", or "" when there is neither.
std::string metricsText(const Metrics &metrics);

} // namespace heterps::runtime

#endif // HETERPS_RUNTIME_METRICS_H
