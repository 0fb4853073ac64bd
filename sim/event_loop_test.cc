#include "sim/event_loop.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(EventLoop, OrdersByTimeThenSequence) {
  EventLoop loop;
  std::string order;
  loop.schedule_at(20, [&] { order += "c"; });
  loop.schedule_at(10, [&] { order += "a"; });
  loop.schedule_at(10, [&] { order += "b"; });  // same instant: scheduled later, runs later
  loop.run();
  EXPECT_EQ(order, "abc");
  EXPECT_EQ(loop.now(), 20);
  EXPECT_EQ(loop.events_run(), 3u);
}

TEST(EventLoop, CancelSkipsAnEventOnce) {
  EventLoop loop;
  int ran = 0;
  const EventId a = loop.schedule_at(5, [&] { ++ran; });
  loop.schedule_at(6, [&] { ++ran; });
  EXPECT_EQ(loop.pending(), 2u);
  EXPECT_TRUE(loop.cancel(a));
  EXPECT_FALSE(loop.cancel(a));
  EXPECT_EQ(loop.pending(), 1u);
  loop.run();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(loop.pending(), 0u);
  EXPECT_FALSE(loop.cancel(a));
  EXPECT_FALSE(loop.cancel(EventId{}));
}

TEST(EventLoop, RunUntilLeavesLaterEventsPending) {
  EventLoop loop;
  int ran = 0;
  loop.schedule_at(5, [&] { ++ran; });
  const EventId late = loop.schedule_at(50, [&] { ++ran; });
  loop.run(10);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(loop.pending(), 1u);
  EXPECT_TRUE(loop.cancel(late));
}

TEST(EventLoop, EventsScheduleEventsAndTimeNeverGoesBack) {
  EventLoop loop;
  TimeNs last = -1;
  int n = 0;
  std::function<void()> tick = [&] {
    EXPECT_GE(loop.now(), last);
    last = loop.now();
    if (++n < 100) loop.schedule_in(n % 3, tick);
  };
  loop.schedule_at(0, tick);
  loop.run();
  EXPECT_EQ(n, 100);
  EXPECT_THROW(loop.schedule_at(loop.now() - 1, [] {}), InternalError);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(EventLoop, BackgroundEventsDoNotKeepTheRunAlive) {
  EventLoop loop;
  int probes = 0;
  std::function<void()> probe = [&] {
    ++probes;
    loop.schedule_background_in(10, probe);
  };
  loop.schedule_background_at(0, probe);
  loop.schedule_at(35, [] {});  // the last piece of real work
  loop.run();
  EXPECT_EQ(loop.now(), 35);
  EXPECT_EQ(probes, 4);  // at 0, 10, 20, 30
  EXPECT_EQ(loop.pending_foreground(), 0u);
  EXPECT_EQ(loop.pending(), 1u);  // the probe at 40 is still queued
}

}  // namespace
}  // namespace fleetsim
