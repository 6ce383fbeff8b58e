//===- MetricsTest.cpp - Training and evaluation metrics ------------------===//

#include "heterps/Runtime/Metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace heterps::runtime;

namespace {

Tensor column(const std::vector<float> &values) {
  Tensor t(DType::F32, {static_cast<int64_t>(values.size()), 1});
  std::copy(values.begin(), values.end(), t.as<float>());
  return t;
}

/// The AUC by definition: the share of positive-negative pairs ranked
/// right, ties counted half.
double pairwiseAUC(const std::vector<float> &p, const std::vector<float> &y) {
  double right = 0, pairs = 0;
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = 0; j < p.size(); ++j)
      if (y[i] > 0.5f && y[j] < 0.5f) {
        pairs += 1;
        right += p[i] > p[j] ? 1 : p[i] == p[j] ? 0.5 : 0;
      }
  return right / pairs;
}

TEST(MetricsTest, BinaryMetricsMatchTheirDefinitions) {
  std::vector<float> p{0.9f, 0.8f, 0.3f, 0.6f, 0.2f, 0.1f, 0.7f, 0.4f};
  std::vector<float> y{1, 1, 0, 1, 0, 0, 0, 1};
  Metrics m;
  m.add(column(p), column(y));
  ASSERT_TRUE(m.hasAUC());
  EXPECT_EQ(m.binaryExamples(), 8);
  EXPECT_EQ(m.positiveExamples(), 4);
  EXPECT_NEAR(m.auc(), pairwiseAUC(p, y), 1e-12);
  double logLoss = 0, sum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    logLoss -= y[i] ? std::log(double(p[i])) : std::log(1 - double(p[i]));
    sum += p[i];
  }
  logLoss /= p.size();
  EXPECT_NEAR(m.logLoss(), logLoss, 1e-6);
  // Half positive: the base entropy is log 2.
  EXPECT_NEAR(m.normalizedEntropy(), logLoss / std::log(2.0), 1e-6);
  EXPECT_NEAR(m.calibration(), sum / 4, 1e-6);
}

TEST(MetricsTest, BucketedAUCIsCloseToTheExactOneOnManyScores) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 1);
  std::vector<float> p, y;
  for (int i = 0; i < 3000; ++i) {
    float label = i % 3 == 0;
    y.push_back(label);
    p.push_back(1 / (1 + std::exp(-(noise(rng) + 1.5f * label - 2))));
  }
  Metrics m;
  m.add(column(p), column(y));
  EXPECT_NEAR(m.auc(), pairwiseAUC(p, y), 1e-3);
}

TEST(MetricsTest, MergedWindowsEqualOneWindow) {
  std::vector<float> p{0.9f, 0.2f, 0.65f, 0.6f, 0.05f, 0.5f};
  std::vector<float> y{1, 0, 1, 0, 0, 1};
  Metrics whole, first, second;
  whole.add(column(p), column(y));
  whole.addLoss(0.5, 6);
  first.add(column({p.begin(), p.begin() + 3}),
            column({y.begin(), y.begin() + 3}));
  first.addLoss(0.4, 3);
  second.add(column({p.begin() + 3, p.end()}),
             column({y.begin() + 3, y.end()}));
  second.addLoss(0.6, 3);
  first.merge(second);
  EXPECT_DOUBLE_EQ(first.auc(), whole.auc());
  EXPECT_DOUBLE_EQ(first.logLoss(), whole.logLoss());
  EXPECT_DOUBLE_EQ(first.calibration(), whole.calibration());
  EXPECT_DOUBLE_EQ(first.meanLoss(), whole.meanLoss());
  EXPECT_EQ(metricsJSON(first), metricsJSON(whole));
}

TEST(MetricsTest, SummedAcrossProcessesAsMergedWindows) {
  // Two processes that saw the same examples: the all-reduce doubles every
  // count, as merging the window with itself does; the loss is the job's
  // already and stays.
  Metrics window;
  window.add(column({0.9f, 0.2f, 0.6f, 0.4f}), column({1, 0, 0, 1}));
  window.addLoss(0.5, 4);
  Metrics merged = window;
  merged.merge(window);
  window.sumAcrossProcesses([](double *values, size_t n) {
    for (size_t i = 0; i < n; ++i)
      values[i] *= 2;
  });
  EXPECT_EQ(window.binaryExamples(), 8);
  EXPECT_EQ(metricsJSON(window), metricsJSON(merged));
  EXPECT_DOUBLE_EQ(window.meanLoss(), 0.5);
  // A process that has seen no binary example yet still sends histograms.
  Metrics empty;
  size_t sent = 0;
  empty.sumAcrossProcesses([&](double *, size_t n) { sent = n; });
  EXPECT_EQ(sent, 2 * size_t(Metrics::kAUCBuckets) + 7);
}

TEST(MetricsTest, LogitsAreSquashed) {
  std::vector<float> logits{2.0f, -1.0f, 0.5f, -3.0f};
  std::vector<float> probabilities, y{1, 0, 0, 1};
  for (float x : logits)
    probabilities.push_back(1 / (1 + std::exp(-x)));
  Metrics fromLogits(/*logits=*/true), fromProbabilities;
  fromLogits.add(column(logits), column(y));
  fromProbabilities.add(column(probabilities), column(y));
  EXPECT_NEAR(fromLogits.logLoss(), fromProbabilities.logLoss(), 1e-6);
  EXPECT_NEAR(fromLogits.calibration(), fromProbabilities.calibration(), 1e-6);
  EXPECT_DOUBLE_EQ(fromLogits.auc(), fromProbabilities.auc());
}

TEST(MetricsTest, NonFinitePredictionsAreLeftOutAndCounted) {
  Metrics m;
  m.add(column({0.8f, NAN, 0.3f, INFINITY}), column({1, 1, 0, 0}));
  EXPECT_EQ(m.binaryExamples(), 2);
  EXPECT_EQ(m.nonFinitePredictions(), 2);
  EXPECT_DOUBLE_EQ(m.auc(), 1.0);
  EXPECT_TRUE(std::isfinite(m.logLoss()));
}

TEST(MetricsTest, OneClassHasNoAUCOrEntropy) {
  Metrics m;
  m.add(column({0.8f, 0.3f}), column({1, 1}));
  EXPECT_DOUBLE_EQ(m.auc(), 0.5);
  EXPECT_FALSE(m.hasBothClasses());
  EXPECT_EQ(metricsText(m).find("ne "), std::string::npos);
  EXPECT_EQ(metricsJSON(m).find("\"ne\""), std::string::npos);
}

TEST(MetricsTest, ClassLabelsGiveAccuracy) {
  Tensor scores(DType::F32, {3, 3});
  float values[] = {0.1f, 0.7f, 0.2f, 0.5f, 0.3f, 0.2f, 0.2f, 0.2f, 0.6f};
  std::copy(values, values + 9, scores.as<float>());
  Tensor labels(DType::I64, {3});
  int64_t classes[] = {1, 2, 2};
  std::copy(classes, classes + 3, labels.as<int64_t>());
  Metrics m;
  m.add(scores, labels);
  EXPECT_FALSE(m.hasAUC());
  EXPECT_NEAR(m.accuracy(), 2.0 / 3, 1e-12);
  EXPECT_EQ(metricsText(m), "accuracy 0.6667");
}

TEST(MetricsTest, ResetKeepsTheLogitSetting) {
  Metrics m(/*logits=*/true);
  m.add(column({0.0f}), column({1}));
  m.reset();
  EXPECT_FALSE(m.hasAUC());
  m.add(column({0.0f}), column({1}));
  // sigmoid(0) = 0.5.
  EXPECT_NEAR(m.calibration(), 0.5, 1e-12);
}

} // namespace
