#include "sim/fleet/gpu_share.h"

#include <algorithm>
#include <utility>

namespace fleetsim {

GpuShare::JobId GpuShare::start(TimeNs solo_ns, std::function<void()> done) {
  advance();
  const JobId id = next_id_++;
  jobs_.push_back(Job{id, std::max<TimeNs>(solo_ns, 0), std::move(done)});
  reschedule();
  return id;
}

bool GpuShare::cancel(JobId id) {
  const auto it =
      std::find_if(jobs_.begin(), jobs_.end(), [id](const Job& j) { return j.id == id; });
  if (it == jobs_.end()) return false;
  advance();
  jobs_.erase(it);
  reschedule();
  return true;
}

void GpuShare::advance() {
  const TimeNs now = loop_.now();
  if (!jobs_.empty()) {
    // k jobs served together for `elapsed`: each got elapsed / k of solo work. Completions are
    // scheduled at whole multiples of k, so the job that ends gets exactly its remainder.
    const auto k = static_cast<TimeNs>(jobs_.size());
    const TimeNs served = (now - last_) / k;
    for (Job& j : jobs_) j.remaining = std::max<TimeNs>(j.remaining - served, 0);
  }
  last_ = now;
}

void GpuShare::reschedule() {
  if (next_done_.valid()) loop_.cancel(next_done_);
  next_done_ = EventId{};
  if (jobs_.empty()) return;
  TimeNs least = jobs_.front().remaining;
  for (const Job& j : jobs_) least = std::min(least, j.remaining);
  const auto k = static_cast<TimeNs>(jobs_.size());
  // Work that would end past the clock's limit lands on it, which the loop refuses with its
  // error (an absurd slowdown), instead of wrapping around.
  const TimeNs room = (kTimeLimit - loop_.now()) / k;
  const TimeNs at = least > room ? kTimeLimit : loop_.now() + least * k;
  next_done_ = loop_.schedule_at(at, [this] { complete_due(); });
}

void GpuShare::complete_due() {
  next_done_ = EventId{};
  advance();
  // Take the finished jobs out before running their callbacks: a callback may start the pod's
  // next step on this GPU.
  std::vector<std::function<void()>> finished;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->remaining > 0) {
      ++it;
      continue;
    }
    finished.push_back(std::move(it->done));
    it = jobs_.erase(it);
  }
  reschedule();
  for (auto& done : finished) done();
}

}  // namespace fleetsim
