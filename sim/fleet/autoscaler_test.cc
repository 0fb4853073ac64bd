// The HPA's replica calculation and behavior, against hand-worked cases of the Kubernetes
// algorithm (replica_calculator.go, horizontal.go).
#include "sim/fleet/autoscaler.h"

#include <gtest/gtest.h>

namespace fleetsim {
namespace {

using Pods = std::vector<std::pair<MetricPod, double>>;

Pods ready(std::initializer_list<double> values) {
  Pods p;
  for (const double v : values) p.emplace_back(MetricPod::kReady, v);
  return p;
}

TEST(HpaReplicas, ScalesByTheUsageRatioOfTheReadyPods) {
  EXPECT_EQ(hpa_replicas(ready({10, 10}), 2, 5, 0.1), 4);   // ratio 2
  EXPECT_EQ(hpa_replicas(ready({6, 7, 8}), 3, 5, 0.1), 5);  // ratio 1.4 -> ceil(4.2)
  EXPECT_EQ(hpa_replicas(ready({1, 0, 0, 0}), 4, 5, 0.1), 1);
}

TEST(HpaReplicas, InsideTheToleranceNothingChanges) {
  EXPECT_EQ(hpa_replicas(ready({5.4, 5.4}), 2, 5, 0.1), 2);  // ratio 1.08
  EXPECT_EQ(hpa_replicas(ready({4.6, 4.6}), 2, 5, 0.1), 2);
  EXPECT_EQ(hpa_replicas(ready({5.6, 5.6}), 2, 5, 0.1), 3);  // ratio 1.12
}

TEST(HpaReplicas, PendingPodsCountAsIdleWhenScalingUp) {
  // Two ready at 10, two pending: (10 + 10 + 0 + 0) / (5 x 4) = 1.0, inside the tolerance, so
  // the pods already on their way are enough.
  Pods p = ready({10, 10});
  p.emplace_back(MetricPod::kPending, 0);
  p.emplace_back(MetricPod::kPending, 0);
  EXPECT_EQ(hpa_replicas(p, 4, 5, 0.1), 4);
  // At 20 each the filled ratio is 2: 8 pods.
  p[0].second = p[1].second = 20;
  EXPECT_EQ(hpa_replicas(p, 4, 5, 0.1), 8);
}

TEST(HpaReplicas, PodsWithoutMetricsCountAtTargetWhenScalingDown) {
  // Ready at 1 and 1, one loading: (1 + 1 + 5) / (5 x 3) = 0.467 -> ceil(1.4) = 2.
  Pods p = ready({1, 1});
  p.emplace_back(MetricPod::kMissing, 0);
  EXPECT_EQ(hpa_replicas(p, 3, 5, 0.1), 2);
  // Pending pods are ignored when scaling down: the same answer.
  p.emplace_back(MetricPod::kPending, 0);
  EXPECT_EQ(hpa_replicas(p, 4, 5, 0.1), 2);
}

TEST(HpaReplicas, FillingThatReversesTheDirectionHoldsTheReplicas) {
  // Ready at 6 (ratio 1.2) but three loading pods at 0: (6 + 0 + 0 + 0) / 20 = 0.3, the other
  // way: no change.
  Pods p = ready({6});
  for (int i = 0; i < 3; ++i) p.emplace_back(MetricPod::kMissing, 0);
  EXPECT_EQ(hpa_replicas(p, 4, 5, 0.1), 4);
}

TEST(HpaReplicas, NoMetricsNoChange) {
  Pods p{{MetricPod::kMissing, 0}, {MetricPod::kPending, 0}};
  EXPECT_EQ(hpa_replicas(p, 2, 5, 0.1), 2);
}

AutoscalerConfig behavior_config() {
  AutoscalerConfig c;
  c.min_pods = 1;
  c.max_pods = 100;
  c.up_window = 0;
  c.down_window = sec_to_ns(300);
  c.policy_period = sec_to_ns(15);
  c.up_max_percent = 100;
  c.up_max_pods = 4;
  c.down_max_percent = 100;
  return c;
}

TEST(HpaBehavior, ScaleUpIsLimitedToDoublingOrFourPodsPerPeriod) {
  const AutoscalerConfig c = behavior_config();
  HpaBehavior b(c);
  EXPECT_EQ(b.decide(0, 2, 20), 6);  // max(2 x 2, 2 + 4)
  // Within the same period the limit still counts from the period's start (2 pods).
  EXPECT_EQ(b.decide(sec_to_ns(5), 6, 20), 6);
  // A period later: max(6 x 2, 6 + 4) = 12.
  EXPECT_EQ(b.decide(sec_to_ns(16), 6, 20), 12);
  EXPECT_EQ(b.decide(sec_to_ns(32), 12, 20), 20);
}

TEST(HpaBehavior, ScaleDownWaitsForTheStabilizationWindow) {
  const AutoscalerConfig c = behavior_config();
  HpaBehavior b(c);
  EXPECT_EQ(b.decide(0, 8, 8), 8);
  // The highest recommendation of the last 300 s holds the replicas.
  EXPECT_EQ(b.decide(sec_to_ns(15), 8, 2), 8);
  EXPECT_EQ(b.decide(sec_to_ns(299), 8, 2), 8);
  // Once the 8 is older than the window, the highest left is 2.
  EXPECT_EQ(b.decide(sec_to_ns(301), 8, 2), 2);
}

TEST(HpaBehavior, ScaleDownPercentPolicyAndBounds) {
  AutoscalerConfig c = behavior_config();
  c.down_window = 0;
  c.down_max_percent = 50;
  c.min_pods = 2;
  HpaBehavior b(c);
  EXPECT_EQ(b.decide(0, 10, 1), 5);               // at most half of the period's start
  EXPECT_EQ(b.decide(sec_to_ns(5), 5, 1), 5);     // the period started at 10: no more yet
  EXPECT_EQ(b.decide(sec_to_ns(16), 5, 1), 2);    // half of 5 is 2 (truncated), the minimum
  EXPECT_EQ(b.decide(sec_to_ns(32), 2, 200), 6);  // and back up, by max(100%, 4 pods)
}

TEST(HpaBehavior, UpStabilizationTakesTheLowestRecommendation) {
  AutoscalerConfig c = behavior_config();
  c.up_window = sec_to_ns(60);
  HpaBehavior b(c);
  EXPECT_EQ(b.decide(0, 2, 2), 2);
  EXPECT_EQ(b.decide(sec_to_ns(15), 2, 5), 2);  // the 2 of 15 s ago still holds
  EXPECT_EQ(b.decide(sec_to_ns(61), 2, 5), 5);
}

}  // namespace
}  // namespace fleetsim
