#include "sim/fleet/kv_network.h"

#include <gtest/gtest.h>

#include <map>

namespace fleetsim {
namespace {

// Records when each read arrives.
struct Arrivals {
  std::map<int, TimeNs> at;
  std::function<void()> read(EventLoop& loop, int name) {
    return [this, &loop, name] { at[name] = loop.now(); };
  }
};

TEST(KvNetwork, AReadAloneRunsAtFullSpeed) {
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals a;
  const auto id = net.start(0, 1, 1.0, 7000, a.read(loop, 1));
  EXPECT_DOUBLE_EQ(net.rate(id), 1.0);
  loop.run();
  EXPECT_EQ(a.at[1], 7000);
  EXPECT_EQ(net.reads(), 0);
}

TEST(KvNetwork, TwoReadsFromOnePrefillPodShareItsLink) {
  // Into two decode pods from one TP 1 prefill pod: half speed each. The 3,000 ns read ends at
  // 6,000; the 7,000 ns one has 4,000 left, alone: 10,000 (the link busy throughout).
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals a;
  const auto big = net.start(1, 0, 1.0, 7000, a.read(loop, 1));
  net.start(2, 0, 1.0, 3000, a.read(loop, 2));
  EXPECT_DOUBLE_EQ(net.rate(big), 0.5);
  loop.run();
  EXPECT_EQ(a.at[2], 6000);
  EXPECT_EQ(a.at[1], 10000);
}

TEST(KvNetwork, TwoReadsIntoOneDecodePodShareItsLink) {
  // From two prefill pods into one decode pod: its incoming link is the bottleneck.
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals a;
  net.start(5, 0, 1.0, 4000, a.read(loop, 1));
  net.start(5, 1, 1.0, 4000, a.read(loop, 2));
  // A read between two other pods is not slowed by them.
  net.start(6, 2, 1.0, 4000, a.read(loop, 3));
  loop.run();
  EXPECT_EQ(a.at[1], 8000);
  EXPECT_EQ(a.at[2], 8000);
  EXPECT_EQ(a.at[3], 4000);
}

TEST(KvNetwork, AWidePrefillPodServesAsManyReadersAsItHasNics) {
  // A TP 4 prefill pod, TP 1 readers: each read keeps a quarter of its link busy. Four run at
  // full speed; a fifth brings all five to 4/5, so 4,000 ns of work takes 5,000.
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals a;
  for (int i = 0; i < 4; ++i) net.start(10 + i, 0, 0.25, 4000, a.read(loop, i));
  EXPECT_DOUBLE_EQ(net.rate(1), 1.0);
  const auto fifth = net.start(14, 0, 0.25, 4000, a.read(loop, 4));
  EXPECT_DOUBLE_EQ(net.rate(fifth), 0.8);
  loop.run();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a.at[i], 5000) << i;
}

TEST(KvNetwork, MaxMinFairness) {
  // Reads A (into pod 1) and B (into pod 2) from prefill pod 0, and C into pod 1 from pod 3.
  // Pod 0's link holds A and B at 1/2; pod 1's incoming link then has 1/2 left for C.
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals arr;
  const auto a = net.start(1, 0, 1.0, 100000, arr.read(loop, 1));
  const auto b = net.start(2, 0, 1.0, 100000, arr.read(loop, 2));
  const auto c = net.start(1, 3, 1.0, 100000, arr.read(loop, 3));
  EXPECT_DOUBLE_EQ(net.rate(a), 0.5);
  EXPECT_DOUBLE_EQ(net.rate(b), 0.5);
  EXPECT_DOUBLE_EQ(net.rate(c), 0.5);
  // Without B, A and C split pod 1's incoming link.
  EXPECT_TRUE(net.cancel(b));
  EXPECT_DOUBLE_EQ(net.rate(a), 0.5);
  EXPECT_DOUBLE_EQ(net.rate(c), 0.5);
  EXPECT_FALSE(net.cancel(b));
  // A into a third pod instead: C alone on pod 1 runs at full speed.
  EXPECT_TRUE(net.cancel(a));
  EXPECT_DOUBLE_EQ(net.rate(c), 1.0);
}

TEST(KvNetwork, AReadNotHeldByAFullLinkKeepsRising) {
  // A (into pod 1 from pod 0) and B (into pod 1 from pod 2) fill pod 1's incoming link at 1/2.
  // C reads from pod 0 into pod 3 at a quarter of pod 0's NICs: pod 0's link carries A's 1/2
  // and C's 1/4 at full speed, so C runs at full speed.
  EventLoop loop;
  KvNetwork net(loop);
  const auto a = net.start(1, 0, 1.0, 100000, [] {});
  const auto b = net.start(1, 2, 1.0, 100000, [] {});
  const auto c = net.start(3, 0, 0.25, 100000, [] {});
  EXPECT_DOUBLE_EQ(net.rate(a), 0.5);
  EXPECT_DOUBLE_EQ(net.rate(b), 0.5);
  EXPECT_DOUBLE_EQ(net.rate(c), 1.0);
}

TEST(KvNetwork, ALaterReadSlowsOneUnderWay) {
  // A (8,000) alone for 2,000: 6,000 left; B (2,000) joins on the same source: both at 1/2,
  // B ends at 6,000, A has 4,000 left: 10,000.
  EventLoop loop;
  KvNetwork net(loop);
  Arrivals a;
  net.start(1, 0, 1.0, 8000, a.read(loop, 1));
  loop.schedule_at(2000, [&] { net.start(2, 0, 1.0, 2000, a.read(loop, 2)); });
  loop.run();
  EXPECT_EQ(a.at[2], 6000);
  EXPECT_EQ(a.at[1], 10000);
}

}  // namespace
}  // namespace fleetsim
