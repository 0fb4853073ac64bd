#include "sim/fleet/parallel.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/event_loop.h"
#include "sim/progress.h"
#include "sim/stop.h"

namespace fleetsim {
namespace {

// A simulation that never ends on its own: one event that reschedules itself forever. Only a
// stop flag ends it.
void run_forever() {
  EventLoop loop;
  std::function<void()> tick = [&] { loop.schedule_in(1, tick); };
  loop.schedule_in(1, tick);
  loop.run();
}

TEST(Parallel, AFailureStopsTheSimulationsBesideIt) {
  for (const int threads : {1, 2}) {
    // Index 0 fails at once; index 1 would run forever unless the failure stops it (one thread:
    // it starts after the failure and stops at its first poll).
    const auto errors = for_each_index(2, threads, [](std::size_t i) {
      if (i == 0) throw std::runtime_error("the real failure");
      run_forever();
    });
    ASSERT_TRUE(errors[0] && errors[1]) << threads;
    EXPECT_THROW(std::rethrow_exception(errors[1]), StoppedError);
    try {
      rethrow_first(errors);
      ADD_FAILURE() << "nothing rethrown";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "the real failure");
    }
  }
}

TEST(Parallel, TheFailureIsReportedBeforeTheStopsItCausedWhateverTheirOrder) {
  // Index 0 is the one stopped, index 1 the one that failed: the report names index 1's error.
  const auto errors = for_each_index(2, 2, [](std::size_t i) {
    if (i == 1) throw std::invalid_argument("index 1 failed");
    run_forever();
  });
  EXPECT_EQ(first_error(errors), 1u);
  EXPECT_THROW(rethrow_first(errors), std::invalid_argument);
}

TEST(Parallel, AnOuterBatchOrAnInterruptStopsAnInnerOne) {
  // A sweep's point whose arms run in an inner batch: the outer failure stops them too.
  const auto errors = for_each_index(2, 2, [](std::size_t i) {
    if (i == 0) throw std::runtime_error("outer failure");
    rethrow_first(for_each_index(2, 1, [](std::size_t) { run_forever(); }));
  });
  EXPECT_THROW(std::rethrow_exception(errors[1]), StoppedError);
  // The process's flag stops everything; cleared, runs go on as before.
  process_stop_flag().request();
  EXPECT_THROW(rethrow_first(for_each_index(1, 1, [](std::size_t) { run_forever(); })),
               StoppedError);
  process_stop_flag().clear();
  std::atomic<int> ran{0};
  rethrow_first(for_each_index(3, 2, [&](std::size_t) { ++ran; }));
  EXPECT_EQ(ran.load(), 3);
}

TEST(Parallel, IndicesTakenAfterAFailureDoNotRun) {
  // One thread: index 0 fails, so 1 and 2 are stopped without their body being called.
  std::atomic<int> ran{0};
  const auto errors = for_each_index(3, 1, [&](std::size_t i) {
    ++ran;
    if (i == 0) throw std::runtime_error("first");
  });
  EXPECT_EQ(ran.load(), 1);
  EXPECT_THROW(std::rethrow_exception(errors[2]), StoppedError);
}

// Records what a batch reports, from any thread.
class CountingObserver : public ProgressObserver {
 public:
  void started(std::size_t total) override {
    const std::lock_guard lock(mutex_);
    totals.push_back(total);
  }
  void finished(std::size_t done, std::size_t total) override {
    const std::lock_guard lock(mutex_);
    done_seen.push_back(done);
    EXPECT_EQ(total, totals.back());
  }
  void advanced(std::size_t index, double fraction) override {
    const std::lock_guard lock(mutex_);
    advances.emplace_back(index, fraction);
  }
  std::vector<std::size_t> totals;
  std::vector<std::size_t> done_seen;
  std::vector<std::pair<std::size_t, double>> advances;

 private:
  std::mutex mutex_;
};

TEST(Parallel, OnlyTheOutermostBatchReportsProgress) {
  for (const int threads : {1, 3}) {
    CountingObserver observer;
    {
      const ScopedProgressObserver installed(&observer);
      // Four sweep points, each running its three arms in a batch of its own.
      rethrow_first(for_each_index(4, threads, [](std::size_t) {
        rethrow_first(for_each_index(3, 1, [](std::size_t) {}));
      }));
    }
    EXPECT_EQ(observer.totals, std::vector<std::size_t>{4}) << threads;
    std::sort(observer.done_seen.begin(), observer.done_seen.end());
    EXPECT_EQ(observer.done_seen, (std::vector<std::size_t>{1, 2, 3, 4})) << threads;
    EXPECT_EQ(current_progress_observer(), nullptr);
  }
}

TEST(Parallel, OnlyTheOutermostBatchsSimulationsReportHowFarTheyCame) {
  CountingObserver observer;
  {
    const ScopedProgressObserver installed(&observer);
    rethrow_first(for_each_index(2, 1, [](std::size_t i) {
      report_simulated_fraction(0.25 * static_cast<double>(i + 1));
      // A batch nested inside (a point's arms) reports nothing of its own simulations.
      rethrow_first(for_each_index(2, 1, [](std::size_t) { report_simulated_fraction(0.9); }));
    }));
  }
  report_simulated_fraction(0.5);  // no batch runs this thread's simulation: nobody hears it
  using Advance = std::pair<std::size_t, double>;
  EXPECT_THAT(observer.advances, ::testing::ElementsAre(Advance{0, 0.25}, Advance{0, 1.0},
                                                        Advance{1, 0.5}, Advance{1, 1.0}));
}

TEST(Parallel, ARunNobodyStopsIsUntouched) {
  EventLoop loop;
  int fired = 0;
  for (int i = 0; i < 10'000; ++i) loop.schedule_in(i, [&] { ++fired; });
  loop.run();
  EXPECT_EQ(fired, 10'000);
  EXPECT_EQ(loop.events_run(), 10'000u);
}

}  // namespace
}  // namespace fleetsim
