#include "sim/fleet/campaign/replicate_stats.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

namespace fleetsim {
namespace {

TEST(ReplicateStats, SpreadIsTheSampleMeanSdAndCv) {
  const Spread s = spread({1, 2, 3, 4});
  EXPECT_EQ(s.n, 4);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_NEAR(s.sd, 1.2909944, 1e-6);  // sqrt(5/3)
  EXPECT_NEAR(s.cv_pct, 51.639778, 1e-5);
  EXPECT_EQ(spread({0, 0, 0}).cv_pct, 0.0);
  EXPECT_TRUE(std::isinf(spread({-1, 1}).cv_pct));
}

TEST(ReplicateStats, BcaOfASymmetricSampleIsCloseToTheNormalInterval) {
  std::vector<double> x;
  for (int i = 1; i <= 20; ++i) x.push_back(i);
  Rng rng(1);
  const Interval ci = bca_interval(x, 0.95, 20000, rng);
  // The bootstrap's standard error is the plug-in one: sd sqrt((n-1)/n) / sqrt(n) = 1.2903.
  const double half = 1.959964 * 1.2903;
  EXPECT_NEAR(ci.low, 10.5 - half, 0.15);
  EXPECT_NEAR(ci.high, 10.5 + half, 0.15);
}

TEST(ReplicateStats, BcaFollowsTheSkewOfTheSample) {
  const std::vector<double> x = {1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 5, 10, 20};
  Rng rng(2);
  const Interval ci = bca_interval(x, 0.95, 20000, rng);
  const double mean = spread(x).mean;
  EXPECT_LT(ci.low, mean);
  EXPECT_GT(ci.high, mean);
  // A right-skewed sample's mean is less sure upwards: the interval reaches further up.
  EXPECT_GT(ci.high - mean, 1.3 * (mean - ci.low));
}

TEST(ReplicateStats, BcaIsDeterministicForASeedAndAPointWithoutSpread) {
  const std::vector<double> x = {3.1, 2.7, 3.9, 3.3, 2.8};
  Rng a(9), b(9);
  const Interval i1 = bca_interval(x, 0.9, 1000, a);
  const Interval i2 = bca_interval(x, 0.9, 1000, b);
  EXPECT_EQ(i1.low, i2.low);
  EXPECT_EQ(i1.high, i2.high);
  Rng c(3);
  const Interval flat = bca_interval({4, 4, 4}, 0.95, 500, c);
  EXPECT_EQ(flat.low, 4);
  EXPECT_EQ(flat.high, 4);
}

TEST(ReplicateStats, TostOnPairedDifferences) {
  // Differences 1..5: mean 3, se sqrt(2.5)/sqrt(5) = 0.7071; against a margin of 5 the upper
  // one-sided test has t = (3 - 5) / 0.7071 = -2.828 on 4 degrees of freedom, p = 0.02371.
  const std::vector<double> a = {10, 10, 10, 10, 10};
  const std::vector<double> b = {11, 12, 13, 14, 15};
  const Tost t = paired_tost(a, b, 5, 0.05);
  EXPECT_DOUBLE_EQ(t.mean_diff, 3);
  EXPECT_NEAR(t.se, 0.70710678, 1e-7);
  EXPECT_NEAR(t.p_value, 0.0237103, 1e-6);
  EXPECT_TRUE(t.equivalent);
  EXPECT_FALSE(paired_tost(a, b, 5, 0.01).equivalent);
  EXPECT_FALSE(paired_tost(a, b, 2, 0.05).equivalent);  // the mean difference is past the margin
  // No spread in the differences: equivalent exactly when inside the margin.
  EXPECT_TRUE(paired_tost(a, {10.5, 10.5, 10.5, 10.5, 10.5}, 1, 0.05).equivalent);
  EXPECT_FALSE(paired_tost(a, {12, 12, 12, 12, 12}, 1, 0.05).equivalent);
  EXPECT_TRUE(paired_tost({0, 0}, {0, 0}, 0, 0.05).equivalent);
}

TEST(ReplicateStats, PairedTTestOfADifference) {
  // Differences 1..5: t = 3 / 0.7071 = 4.243 on 4 degrees of freedom, two-sided p = 0.013236
  // (scipy.stats.t.sf(4.243, 4) * 2).
  EXPECT_NEAR(paired_t_p({10, 10, 10, 10, 10}, {11, 12, 13, 14, 15}), 0.0132356, 1e-6);
  EXPECT_DOUBLE_EQ(paired_t_p({1, 2}, {1, 2}), 1.0);
  EXPECT_DOUBLE_EQ(paired_t_p({1, 2}, {2, 3}), 0.0);
}

TEST(ReplicateStats, HolmMultipliesTheSmallestPByTheFamilySizeAndNeverReordersThem) {
  // Sorted 0.01, 0.02, 0.04, 0.30 of m = 4: 0.04, 0.06, 0.08, 0.30 (each at least the one before).
  EXPECT_THAT(holm_adjusted({0.04, 0.30, 0.01, 0.02}),
              ::testing::Pointwise(::testing::DoubleNear(1e-12), {0.08, 0.30, 0.04, 0.06}));
  // A large p early in the order is carried up to later ones; the result never exceeds 1.
  EXPECT_THAT(holm_adjusted({0.5, 0.6}),
              ::testing::Pointwise(::testing::DoubleNear(1e-12), {1.0, 1.0}));
  EXPECT_THAT(holm_adjusted({}), ::testing::IsEmpty());
}

TEST(ReplicateStats, ReplicatesNeededShrinkTheIntervalBelowTheGap) {
  // t(0.95, 4) / sqrt(5) = 2.132 / 2.236 = 0.953 < 1, while t(0.95, 3) / 2 = 1.177 is not.
  EXPECT_EQ(replicates_needed(1, 1, 0.05, 1000), 5);
  EXPECT_GT(replicates_needed(1, 0.1, 0.05, 1000), 200);
  EXPECT_EQ(replicates_needed(1, 0, 0.05, 77), 77);
}

}  // namespace
}  // namespace fleetsim
