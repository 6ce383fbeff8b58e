//===- Metrics.cpp - Training and evaluation metrics ----------------------===//

#include "heterps/Runtime/Metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace heterps;
using namespace heterps::runtime;

void Metrics::addLoss(double loss, int64_t n) {
  lossSum += loss * n;
  samples += n;
}

void Metrics::add(const Tensor &pred, const Tensor &label,
                  const std::vector<char> &present) {
  if (pred.dtype() != DType::F32)
    return;
  int64_t n = pred.rank() ? pred.dim(0) : 1;
  if (n == 0)
    return;
  int64_t width = pred.numElements() / n;
  const float *p = pred.as<float>();
  if (label.dtype() == DType::F32 && width == 1 && label.numElements() == n) {
    allocateHistograms();
    const float *y = label.as<float>();
    for (int64_t i = 0; i < n; ++i) {
      if (!present.empty() && !present[i])
        continue;
      double score = p[i];
      if (!std::isfinite(score)) {
        ++nonFinite;
        continue;
      }
      double probability =
          logits ? 1 / (1 + std::exp(-score)) : std::clamp(score, 0.0, 1.0);
      int bucket = std::min(static_cast<int>(probability * kAUCBuckets),
                            kAUCBuckets - 1);
      double clamped = std::clamp(probability, 1e-7, 1 - 1e-7);
      probabilitySum += probability;
      if (y[i] > 0.5f) {
        ++positives;
        ++positiveBuckets[bucket];
        logLossSum -= std::log(clamped);
      } else {
        ++negatives;
        ++negativeBuckets[bucket];
        logLossSum -= std::log(1 - clamped);
      }
    }
    return;
  }
  if (label.dtype() == DType::I64 && label.numElements() == n && width > 1) {
    const int64_t *y = label.as<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (!present.empty() && !present[i])
        continue;
      const float *row = p + i * width;
      int64_t best = std::max_element(row, row + width) - row;
      correct += best == y[i];
      ++counted;
    }
  }
}

void Metrics::allocateHistograms() {
  if (positiveBuckets.empty()) {
    positiveBuckets.assign(kAUCBuckets, 0);
    negativeBuckets.assign(kAUCBuckets, 0);
  }
}

void Metrics::merge(const Metrics &other) {
  lossSum += other.lossSum;
  samples += other.samples;
  if (!other.positiveBuckets.empty()) {
    allocateHistograms();
    for (int b = 0; b < kAUCBuckets; ++b) {
      positiveBuckets[b] += other.positiveBuckets[b];
      negativeBuckets[b] += other.negativeBuckets[b];
    }
  }
  positives += other.positives;
  negatives += other.negatives;
  nonFinite += other.nonFinite;
  logLossSum += other.logLossSum;
  probabilitySum += other.probabilitySum;
  correct += other.correct;
  counted += other.counted;
}

void Metrics::sumAcrossProcesses(
    const std::function<void(double *, size_t)> &sum) {
  // Every process sends histograms, whether it has seen binary labels yet
  // or not, so that the arrays agree in size.
  allocateHistograms();
  std::vector<double> counts;
  counts.reserve(2 * kAUCBuckets + 7);
  counts.insert(counts.end(), positiveBuckets.begin(), positiveBuckets.end());
  counts.insert(counts.end(), negativeBuckets.begin(), negativeBuckets.end());
  for (double value :
       {double(positives), double(negatives), double(nonFinite), logLossSum,
        probabilitySum, double(correct), double(counted)})
    counts.push_back(value);
  sum(counts.data(), counts.size());
  // Counts up to 2^53 are exact in a double.
  size_t at = 0;
  for (int64_t &bucket : positiveBuckets)
    bucket = static_cast<int64_t>(counts[at++]);
  for (int64_t &bucket : negativeBuckets)
    bucket = static_cast<int64_t>(counts[at++]);
  positives = static_cast<int64_t>(counts[at++]);
  negatives = static_cast<int64_t>(counts[at++]);
  nonFinite = static_cast<int64_t>(counts[at++]);
  logLossSum = counts[at++];
  probabilitySum = counts[at++];
  correct = static_cast<int64_t>(counts[at++]);
  counted = static_cast<int64_t>(counts[at++]);
}

void Metrics::reset() {
  // The histograms keep their memory: a window is reset every log line.
  std::fill(positiveBuckets.begin(), positiveBuckets.end(), 0);
  std::fill(negativeBuckets.begin(), negativeBuckets.end(), 0);
  lossSum = logLossSum = probabilitySum = 0;
  samples = positives = negatives = nonFinite = correct = counted = 0;
}

double Metrics::auc() const {
  if (!hasBothClasses())
    return 0.5;
  // Each positive ranks above the negatives in lower buckets and ties
  // with half of those in its own.
  double above = 0, negativesBelow = 0;
  for (int b = 0; b < kAUCBuckets; ++b) {
    above += positiveBuckets[b] * (negativesBelow + 0.5 * negativeBuckets[b]);
    negativesBelow += negativeBuckets[b];
  }
  return above / (double(positives) * double(negatives));
}

double Metrics::logLoss() const {
  return binaryExamples() ? logLossSum / binaryExamples() : 0.0;
}

double Metrics::normalizedEntropy() const {
  if (!hasBothClasses())
    return 0.0;
  double rate = double(positives) / binaryExamples();
  double entropy = -(rate * std::log(rate) + (1 - rate) * std::log(1 - rate));
  return logLoss() / entropy;
}

double Metrics::calibration() const {
  return positives ? probabilitySum / positives : 0.0;
}

std::string runtime::metricsText(const Metrics &m) {
  char buf[160];
  if (m.hasAUC() && m.hasBothClasses())
    std::snprintf(buf, sizeof(buf),
                  "auc %.4f  logloss %.4f  ne %.4f  calibration %.3f", m.auc(),
                  m.logLoss(), m.normalizedEntropy(), m.calibration());
  else if (m.hasAUC())
    std::snprintf(buf, sizeof(buf), "auc %.4f  logloss %.4f", m.auc(),
                  m.logLoss());
  else if (m.hasAccuracy())
    std::snprintf(buf, sizeof(buf), "accuracy %.4f", m.accuracy());
  else
    buf[0] = 0;
  return buf;
}

std::string runtime::metricsJSON(const Metrics &m) {
  std::string out;
  auto member = [&](const char *name, double value) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s\"%s\": %.17g", out.empty() ? "" : ", ",
                  name, value);
    out += buf;
  };
  if (m.hasAUC()) {
    member("auc", m.auc());
    member("logloss", m.logLoss());
    if (m.hasBothClasses()) {
      member("ne", m.normalizedEntropy());
      member("calibration", m.calibration());
    }
  }
  if (m.hasAccuracy())
    member("accuracy", m.accuracy());
  if (m.hasAUC() || m.hasAccuracy())
    member("examples", double(m.examples()));
  return out;
}
