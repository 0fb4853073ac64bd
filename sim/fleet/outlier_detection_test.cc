#include "sim/fleet/outlier_detection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace fleetsim {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

OutlierConfig envoy_defaults() {
  return {.consecutive_errors = 5,
          .base_ejection = sec_to_ns(30),
          .max_ejection = sec_to_ns(300),
          .interval = sec_to_ns(10),
          .max_ejection_percent = 10};
}

// `n` errors of `pod` at `t`; true when the last one ejected it.
bool errors(OutlierDetection& o, int pod, int n, TimeNs t) {
  bool ejected = false;
  for (int i = 0; i < n; ++i) ejected = o.on_answer(pod, true, t);
  return ejected;
}

TEST(OutlierDetection, TheFifthErrorInARowEjectsAndASuccessResetsTheRun) {
  OutlierDetection o(envoy_defaults(), {0, 0, 0});
  EXPECT_FALSE(errors(o, 1, 4, 0));
  o.on_answer(1, false, 0);
  EXPECT_FALSE(errors(o, 1, 4, 0));
  EXPECT_TRUE(o.on_answer(1, true, 0));
  EXPECT_TRUE(o.ejected(1));
  EXPECT_EQ(o.ejections(), 1);
}

TEST(OutlierDetection, AnEjectionLastsTheBaseTimesTheTimesEjected) {
  OutlierDetection o(envoy_defaults(), {0, 0, 0});
  errors(o, 0, 5, 0);
  EXPECT_THAT(o.sweep(sec_to_ns(20)), IsEmpty());
  EXPECT_THAT(o.sweep(sec_to_ns(30)), ElementsAre(0));
  errors(o, 0, 5, sec_to_ns(31));  // second ejection: 60 s
  EXPECT_THAT(o.sweep(sec_to_ns(90)), IsEmpty());
  EXPECT_THAT(o.sweep(sec_to_ns(91)), ElementsAre(0));
}

TEST(OutlierDetection, EachSweepSpentInLowersTheMultiplier) {
  OutlierDetection o(envoy_defaults(), {0, 0, 0});
  errors(o, 0, 5, 0);
  o.sweep(sec_to_ns(30));  // back, multiplier 1
  o.sweep(sec_to_ns(40));  // a sweep in: multiplier 0
  errors(o, 0, 5, sec_to_ns(41));
  EXPECT_THAT(o.sweep(sec_to_ns(71)), ElementsAre(0));  // 30 s again, not 60
}

TEST(OutlierDetection, AtMostTheMaxPercentOfAPoolButAlwaysOnePod) {
  OutlierDetection o(envoy_defaults(), {0, 0, 0, 1});
  EXPECT_TRUE(errors(o, 0, 5, 0));   // the first of pool 0, though 1 of 3 is over 10%
  EXPECT_FALSE(errors(o, 1, 5, 0));  // a second would be 67%
  EXPECT_TRUE(errors(o, 3, 5, 0));   // pool 1 counts apart
}

TEST(OutlierDetection, AGoodProbeReturnsAnEjectedPod) {
  OutlierDetection o(envoy_defaults(), {0, 0});
  errors(o, 0, 5, 0);
  EXPECT_TRUE(o.on_probe_ok(0));
  EXPECT_FALSE(o.ejected(0));
  EXPECT_FALSE(o.on_probe_ok(1));
}

}  // namespace
}  // namespace fleetsim
