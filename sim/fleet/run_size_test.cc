#include "sim/fleet/run_size.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/errors.h"

namespace fleetsim {
namespace {

using ::testing::HasSubstr;
using ::testing::Optional;

Scenario two_arms() {
  Scenario s;
  s.file = "big.yaml";
  s.arms.resize(2);
  s.arms[0].name = "a";
  s.arms[1].name = "b";
  return s;
}

TEST(RunSize, ASmallRunSaysNothing) {
  EXPECT_EQ(run_size_warning(two_arms(), 1e6, 64e9), std::nullopt);
}

TEST(RunSize, ALargeRunIsAWarningWithItsRecordsAndCpuTime) {
  EXPECT_THAT(run_size_warning(two_arms(), 2e7, 1e15),
              Optional(HasSubstr("big.yaml: workload: about 2e+07 requests an arm (2 arms)")));
}

TEST(RunSize, RecordsBeyondTheMachinesMemoryAreRefused) {
  EXPECT_THROW(
      {
        try {
          run_size_warning(two_arms(), 1e15, 64e9);
        } catch (const ScenarioError& e) {
          EXPECT_THAT(e.what(), HasSubstr("more than this machine's 60 GiB"));
          throw;
        }
      },
      ScenarioError);
}

TEST(RunSize, FractionIsTheFurtherOfTimeAndRequests) {
  EXPECT_DOUBLE_EQ(run_fraction(sec_to_ns(30), 60, 0, std::nullopt), 0.5);
  EXPECT_DOUBLE_EQ(run_fraction(sec_to_ns(30), 60, 75, 100.0), 0.75);
  EXPECT_DOUBLE_EQ(run_fraction(sec_to_ns(30), 0, 10, 100.0), 0.1);
  EXPECT_DOUBLE_EQ(run_fraction(sec_to_ns(30), 0, 10, std::nullopt), 0.0);
  EXPECT_DOUBLE_EQ(run_fraction(sec_to_ns(90), 60, 0, std::nullopt), 1.0);
}

}  // namespace
}  // namespace fleetsim
