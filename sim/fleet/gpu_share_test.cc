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
  gpu.start(100, {}, log.end(loop, "a"));
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
  gpu.start(100, {}, log.end(loop, "a"));
  loop.schedule_at(40, [&] { gpu.start(30, {}, log.end(loop, "b")); });
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  EXPECT_EQ(log.ends[0], (std::pair<std::string, TimeNs>{"b", 100}));
  EXPECT_EQ(log.ends[1], (std::pair<std::string, TimeNs>{"a", 130}));
}

TEST(GpuShare, EqualJobsStartedTogetherEndTogetherInStartOrder) {
  EventLoop loop;
  GpuShare gpu(loop);
  Log log;
  gpu.start(50, {}, log.end(loop, "a"));
  gpu.start(50, {}, log.end(loop, "b"));
  gpu.start(50, {}, log.end(loop, "c"));
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
  gpu.start(100, {}, log.end(loop, "a"));
  const GpuShare::JobId b = gpu.start(100, {}, log.end(loop, "b"));
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
    if (--left > 0) gpu.start(10, {}, next);
  };
  gpu.start(10, {}, next);
  gpu.start(60, {}, log.end(loop, "long"));
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
  gpu.start(0, {}, [&] { ended = true; });
  EXPECT_FALSE(ended);
  loop.run();
  EXPECT_TRUE(ended);
  EXPECT_EQ(loop.now(), 0);
}

TEST(GpuShare, WorkPastTheClockLimitIsTheLoopsError) {
  EventLoop loop;
  GpuShare gpu(loop);
  gpu.start(kTimeLimit / 2, {}, [] {});
  EXPECT_ANY_THROW(gpu.start(kTimeLimit / 2, {}, [] {}));  // together: ends at the limit
}

// A prefill's step is compute-bound (its kernels keep the SMs' arithmetic busy throughout and
// DRAM a quarter of the time), a decode's memory-bound.
constexpr GpuDemand kPrefill{1.0, 0.25};
constexpr GpuDemand kDecode{0.25, 1.0};

TEST(GpuShare, TimeSlicingTakesTurnsWhateverTheStepsKeepBusy) {
  EventLoop loop;
  GpuShare gpu(loop, GpuSharing::kTimeSlicing);
  Log log;
  gpu.start(100, kPrefill, log.end(loop, "prefill"));
  gpu.start(100, kDecode, log.end(loop, "decode"));
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  for (const auto& [name, t] : log.ends) EXPECT_EQ(t, 200) << name;
}

TEST(GpuShare, UnderMpsAPrefillAndADecodeOverlap) {
  // Both rise together until the SMs (r + r/4) and the DRAM (r/4 + r) fill, at r = 0.8: 125
  // for both, against 200 taking turns.
  EventLoop loop;
  GpuShare gpu(loop, GpuSharing::kMps);
  Log log;
  const auto p = gpu.start(100, kPrefill, log.end(loop, "prefill"));
  gpu.start(100, kDecode, log.end(loop, "decode"));
  EXPECT_DOUBLE_EQ(gpu.rate(p), 0.8);
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  for (const auto& [name, t] : log.ends) EXPECT_EQ(t, 125) << name;
}

TEST(GpuShare, UnderMpsTwoDecodesStillShareTheBandwidth) {
  EventLoop loop;
  GpuShare gpu(loop, GpuSharing::kMps);
  Log log;
  gpu.start(100, kDecode, log.end(loop, "a"));
  gpu.start(100, kDecode, log.end(loop, "b"));
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  for (const auto& [name, t] : log.ends) EXPECT_EQ(t, 200) << name;
}

TEST(GpuShare, AnSmCapHoldsAPrefillEvenOnAnIdleGpu) {
  // Half the SMs: a lone prefill runs at half speed; a lone decode, using a quarter of the
  // arithmetic, does not feel the cap.
  EventLoop loop;
  GpuShare gpu(loop, GpuSharing::kMps, 0.5);
  Log log;
  gpu.start(100, kPrefill, log.end(loop, "prefill"));
  loop.run();
  gpu.start(100, kDecode, log.end(loop, "decode"));
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  EXPECT_EQ(log.ends[0], (std::pair<std::string, TimeNs>{"prefill", 200}));
  EXPECT_EQ(log.ends[1], (std::pair<std::string, TimeNs>{"decode", 300}));
}

TEST(GpuShare, UnderAnSmCapTheDecodeTakesWhatThePrefillCannot) {
  // The prefill stops at its cap (0.5); the decode rises on until the DRAM is full, beside the
  // prefill's eighth: 0.875, ending at 100 / 0.875 = 114.3 (rounded up to 115). The prefill
  // keeps its 0.5 alone: 200.
  EventLoop loop;
  GpuShare gpu(loop, GpuSharing::kMps, 0.5);
  Log log;
  const auto p = gpu.start(100, kPrefill, log.end(loop, "prefill"));
  const auto d = gpu.start(100, kDecode, log.end(loop, "decode"));
  EXPECT_DOUBLE_EQ(gpu.rate(p), 0.5);
  EXPECT_DOUBLE_EQ(gpu.rate(d), 0.875);
  loop.run();
  ASSERT_EQ(log.ends.size(), 2U);
  EXPECT_EQ(log.ends[0], (std::pair<std::string, TimeNs>{"decode", 115}));
  EXPECT_EQ(log.ends[1], (std::pair<std::string, TimeNs>{"prefill", 200}));
}

TEST(GpuShare, SharingNamesFollowTheEnum) {
  EXPECT_EQ(gpu_sharing_names().at(static_cast<size_t>(GpuSharing::kTimeSlicing)), "time_slicing");
  EXPECT_EQ(gpu_sharing_names().at(static_cast<size_t>(GpuSharing::kMps)), "mps");
}

}  // namespace
}  // namespace fleetsim
