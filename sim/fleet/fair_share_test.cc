#include "sim/fleet/fair_share.h"

#include <gtest/gtest.h>

namespace fleetsim {
namespace {

TEST(FairShare, NoJobRunsFasterThanFullSpeed) {
  // Alone on a link it keeps a quarter busy, a job still runs at full speed, and so do three
  // more beside it; a fifth brings all five to 4/5.
  EventLoop loop;
  FairShare share(loop);
  const auto first = share.start({{7, 0.25}}, 1000, [] {});
  EXPECT_DOUBLE_EQ(share.rate(first), 1.0);
  for (int i = 0; i < 3; ++i) share.start({{7, 0.25}}, 1000, [] {});
  EXPECT_DOUBLE_EQ(share.rate(first), 1.0);
  share.start({{7, 0.25}}, 1000, [] {});
  EXPECT_DOUBLE_EQ(share.rate(first), 0.8);
  // A job that crosses no link is never slowed.
  const auto free = share.start({}, 1000, [] {});
  EXPECT_DOUBLE_EQ(share.rate(free), 1.0);
  loop.run();
  EXPECT_EQ(share.jobs(), 0);
  EXPECT_EQ(loop.now(), 1250);
}

TEST(FairShare, ThirdsEndOnTheNanosecond) {
  // Three jobs of 50 at a third each: 150, not 151 from the rounding of 1/3.
  EventLoop loop;
  FairShare share(loop);
  TimeNs end = 0;
  for (int i = 0; i < 3; ++i) share.start({{0, 1.0}}, 50, [&] { end = loop.now(); });
  loop.run();
  EXPECT_EQ(end, 150);
}

}  // namespace
}  // namespace fleetsim
