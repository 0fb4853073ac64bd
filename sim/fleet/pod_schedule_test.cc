#include "sim/fleet/pod_schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(PodSchedule, StepsFromEachPointToTheNext) {
  const PodSchedule s = PodSchedule::parse("60:2, 3000:8, 6000:1", 0, 8, "w");
  EXPECT_EQ(s.at(0), 0);  // nothing wanted before the first point
  EXPECT_EQ(s.at(sec_to_ns(60)), 2);
  EXPECT_EQ(s.at(sec_to_ns(2999.9)), 2);
  EXPECT_EQ(s.at(sec_to_ns(3000)), 8);
  EXPECT_EQ(s.at(sec_to_ns(6000)), 1);
  EXPECT_EQ(s.at(sec_to_ns(1e6)), 1);
  EXPECT_EQ(s.next_step(0), sec_to_ns(60));
  EXPECT_EQ(s.next_step(sec_to_ns(3000)), sec_to_ns(6000));
  EXPECT_EQ(s.next_step(sec_to_ns(6000)), kTimeLimit);
  EXPECT_TRUE(PodSchedule().empty());
  EXPECT_EQ(PodSchedule().at(sec_to_ns(5)), 0);
}

TEST(PodSchedule, APeriodRepeatsTheDay) {
  const PodSchedule s = PodSchedule::parse("28800:6, 64800:2", 86400, 8, "w");
  EXPECT_EQ(s.at(sec_to_ns(3600)), 0);  // the first night: no earlier step
  EXPECT_EQ(s.at(sec_to_ns(30000)), 6);
  EXPECT_EQ(s.at(sec_to_ns(70000)), 2);
  EXPECT_EQ(s.at(sec_to_ns(86400 + 3600)), 2);  // the next night: the evening's step holds
  EXPECT_EQ(s.at(sec_to_ns(86400 + 30000)), 6);
  EXPECT_EQ(s.next_step(sec_to_ns(70000)), sec_to_ns(86400 + 28800));
}

std::string error_of(const std::string& text, double period = 0) {
  try {
    PodSchedule::parse(text, period, 8, "f.yaml:3: autoscaling.schedule");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(PodSchedule, BadTextIsALocatedError) {
  EXPECT_EQ(error_of("0:2, 0:3"),
            "f.yaml:3: autoscaling.schedule: times must increase at '0:3' in '0:2, 0:3'; "
            "expected 'time_s:pods, time_s:pods, ...' with increasing times and pods in [0, "
            "max_pods = 8], e.g. '0:2, 3000:8, 6000:2'");
  for (const char* outside : {"0:9", "0:-1"}) {
    EXPECT_NE(error_of(outside).find("the pods of '" + std::string(outside) +
                                     "' are outside [0, max_pods]"),
              std::string::npos);
  }
  for (const char* bad : {"0:2.5", "x:2", "-5:2", "0", "0:2:3", "nan:1", "1e10:1", ","}) {
    EXPECT_NE(error_of(bad).find("is not time_s:pods"), std::string::npos) << bad;
  }
  EXPECT_NE(error_of("0:1, 90000:2", 86400).find("lies past the period"), std::string::npos);
  EXPECT_NE(error_of("0:1", -1).find("period"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim
