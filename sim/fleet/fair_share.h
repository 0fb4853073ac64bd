// Resources shared as fluids, fairly: jobs of work (nanoseconds at full speed) cross one or more
// links (a GPU's time, a NIC), each of capacity 1, and weigh on each link by a factor. The jobs'
// rates are max-min fair (progressive filling: every job rises at one level until a link it
// crosses is full), recomputed whenever a job starts or ends, so a job slows down when another
// joins its links and speeds up when one leaves. GpuShare and KvNetwork are its two uses.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/event_loop.h"
#include "sim/time.h"

namespace fleetsim {

class FairShare {
 public:
  using JobId = std::uint64_t;  // 0: no job
  // A link a job crosses (any key its owner chooses) and the fraction of the link the job keeps
  // busy while it runs at full speed.
  struct Use {
    std::int64_t link;
    double weight;
  };

  explicit FairShare(EventLoop& loop) : loop_(loop) {}
  FairShare(const FairShare&) = delete;
  FairShare& operator=(const FairShare&) = delete;

  // Starts `solo_ns` of work over `uses`; `done` runs, as an event, once it is served (no work:
  // at once, through an event as well). Work that would end past the clock's limit is the
  // event loop's TimeLimitError.
  JobId start(std::vector<Use> uses, TimeNs solo_ns, std::function<void()> done);
  // Drops an unfinished job; false when it is not running.
  bool cancel(JobId id);
  // The fraction of full speed a job runs at now (0 when it is not running).
  double rate(JobId id) const;
  int jobs() const { return static_cast<int>(jobs_.size()); }

 private:
  struct Job {
    JobId id;
    std::vector<Use> uses;
    double remaining;  // nanoseconds of work left at full speed
    double rate = 0;
    std::function<void()> done;
  };
  // Charges the time since the last change to every job at its rate.
  void advance();
  // Max-min fair rates, then the next end.
  void reallocate();
  void complete_due();

  EventLoop& loop_;
  std::vector<Job> jobs_;  // in start order, so simultaneous ends run in that order
  TimeNs last_ = 0;
  JobId next_id_ = 1;
  EventId next_done_;
};

}  // namespace fleetsim
