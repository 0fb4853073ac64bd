#include "sim/fleet/pipeline_stages.h"

#include <gtest/gtest.h>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(PipelineStages, OneMicrobatchCrossesEveryStageInTurn) {
  PipelineStages p(4);
  // 1 of host work, 10 a stage, 2 between stages: 1 + 4 x 10 + 3 x 2.
  EXPECT_EQ(p.admit(100, 1, 10, 2), 100 + 47);
}

TEST(PipelineStages, MicrobatchesOverlapOneStageApart) {
  PipelineStages p(4);
  const TimeNs first = p.admit(0, 1, 10, 0);
  const TimeNs second = p.admit(0, 1, 10, 0);
  const TimeNs third = p.admit(0, 1, 10, 0);
  EXPECT_EQ(first, 41);
  // Each waits for the first stage to be done with the one before it, then flows behind it.
  EXPECT_EQ(second, 51);
  EXPECT_EQ(third, 61);
  // The stages work back to back: each microbatch ends one stage time after the one before.
  EXPECT_EQ(p.admit(0, 1, 10, 0), 71);
}

TEST(PipelineStages, TheSlowestPartSetsThePace) {
  // Host work longer than a stage: the host, not the GPUs, spaces the microbatches.
  PipelineStages p(2);
  EXPECT_EQ(p.admit(0, 30, 10, 0), 50);
  EXPECT_EQ(p.admit(0, 30, 10, 0), 80);
}

TEST(PipelineStages, AnIdlePipelineStartsAfresh) {
  PipelineStages p(3);
  p.admit(0, 0, 10, 0);
  EXPECT_EQ(p.admit(1000, 0, 10, 0), 1030);
  p.admit(1000, 0, 500, 0);
  p.reset();
  EXPECT_EQ(p.admit(5, 0, 10, 0), 35);
  EXPECT_THROW(PipelineStages(0), InternalError);
}

}  // namespace
}  // namespace fleetsim
