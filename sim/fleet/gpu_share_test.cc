#include "sim/fleet/gpu_share.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace fleetsim {
namespace {

struct Log {
  std::vector<std::pair<std::string, TimeNs>> ends;
  std::function<void()> end(EventLoop& loop, std::string name) {
    return [this, &loop, name] { ends.emplace_back(name, loop.now()); };
  }
};

TEST(GpuShare, AJobAloneRunsAtItsSoloSpeed) {
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  gpu.start(100, log.end(loop, "a"));
  EXPECT_EQ(gpu.running(), 1);
  loop.run();
  ASSERT_EQ(log.ends.size(), 1U);
  EXPECT_EQ(log.ends[0].second, 100);
  EXPECT_EQ(gpu.running(), 0);
}

TEST(GpuShare, ANeighbourSlowsARunningJobFromWhenItStarts) {
  // a (100) alone for 40: 60 left. b (30) joins: both at half speed, b is served after 60 more
  // (t = 100), a has 30 left, alone again: t = 130. The GPU stays busy throughout: 130 = 100 + 30.
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  gpu.start(100, log.end(loop, "a"));
  loop.schedule_at(40, [&] { gpu.start(30, log.end(loop, "b")); });
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  EXPECT_EQ(log.ends[0], (std::pair<std::string, TimeNs>{"b", 100}));
  EXPECT_EQ(log.ends[1], (std::pair<std::string, TimeNs>{"a", 130}));
}

TEST(GpuShare, EqualJobsStartedTogetherEndTogetherInStartOrder) {
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  gpu.start(50, log.end(loop, "a"));
  gpu.start(50, log.end(loop, "b"));
  gpu.start(50, log.end(loop, "c"));
  loop.run();
  ASSERT_EQ(log.ends.size(), 3U);
  for (const auto& [name, t] : log.ends) EXPECT_EQ(t, 150) << name;
  EXPECT_EQ(log.ends[0].first, "a");
  EXPECT_EQ(log.ends[2].first, "c");
}

TEST(GpuShare, ACancelledJobGivesItsShareBack) {
  // a and b (100 each) share from 0; b is cancelled at 50, when a has had 25: 75 more alone.
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  gpu.start(100, log.end(loop, "a"));
  const GpuShare::JobId b = gpu.start(100, log.end(loop, "b"));
  loop.schedule_at(50, [&] { EXPECT_TRUE(gpu.cancel(b)); });
  loop.run();
  ASSERT_EQ(log.ends.size(), 1U);
  EXPECT_EQ(log.ends[0], (std::pair<std::string, TimeNs>{"a", 125}));
  EXPECT_FALSE(gpu.cancel(b));
}

TEST(GpuShare, ACompletionMayStartTheNextJob) {
  // A pod starts its next step from the end of the last: a chain of three 10s beside one 60.
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  int left = 3;
  std::function<void()> next = [&] {
    log.ends.emplace_back("step", loop.now());
    if (--left > 0) gpu.start(10, next);
  };
  gpu.start(10, next);
  gpu.start(60, log.end(loop, "long"));
  loop.run();
  // Shared two ways throughout the chain (steps end at 20, 40, 60), then 30 left alone.
  ASSERT_EQ(log.ends.size(), 4U);
  EXPECT_EQ(log.ends[0].second, 20);
  EXPECT_EQ(log.ends[1].second, 40);
  EXPECT_EQ(log.ends[2].second, 60);
  EXPECT_EQ(log.ends[3], (std::pair<std::string, TimeNs>{"long", 90}));
}

TEST(GpuShare, NoWorkEndsAtOnceButThroughAnEvent) {
  EventLoop loop;
  GpuShare gpu(loop);
  bool ended = false;
  gpu.start(0, [&] { ended = true; });
  EXPECT_FALSE(ended);
  loop.run();
  EXPECT_TRUE(ended);
  EXPECT_EQ(loop.now(), 0);
}

TEST(GpuShare, WorkPastTheClockLimitIsTheLoopsError) {
  EventLoop loop;
  GpuShare gpu(loop);
  gpu.start(kTimeLimit / 2, [] {});
  EXPECT_ANY_THROW(gpu.start(kTimeLimit / 2, [] {}));  // together: ends at the limit
}

}  // namespace
}  // namespace fleetsim
