#include "sim/fleet/fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <utility>

namespace fleetsim {
namespace {

// Rates are fractions (a third), so ends are rounded: work left below half a nanosecond is done,
// and an end a hair past a whole nanosecond (1e-6 ns of rounding) is that nanosecond.
constexpr double kDone = 0.5;
constexpr double kRounding = 1e-6;

}  // namespace

FairShare::JobId FairShare::start(std::vector<Use> uses, TimeNs solo_ns,
                                  std::function<void()> done) {
  advance();
  const JobId id = next_id_++;
  jobs_.push_back(Job{id, std::move(uses), static_cast<double>(std::max<TimeNs>(solo_ns, 0)), 0.0,
                      std::move(done)});
  reallocate();
  return id;
}

bool FairShare::cancel(JobId id) {
  const auto it =
      std::find_if(jobs_.begin(), jobs_.end(), [id](const Job& j) { return j.id == id; });
  if (it == jobs_.end()) return false;
  advance();
  jobs_.erase(it);
  reallocate();
  return true;
}

double FairShare::rate(JobId id) const {
  for (const Job& j : jobs_) {
    if (j.id == id) return j.rate;
  }
  return 0.0;
}

void FairShare::advance() {
  const auto elapsed = static_cast<double>(loop_.now() - last_);
  for (Job& j : jobs_) j.remaining = std::max(0.0, j.remaining - j.rate * elapsed);
  last_ = loop_.now();
}

void FairShare::reallocate() {
  if (next_done_.valid()) loop_.cancel(next_done_);
  next_done_ = EventId{};
  if (jobs_.empty()) return;

  std::map<std::int64_t, double> used;  // capacity taken by the jobs already fixed
  for (const Job& j : jobs_) {
    for (const Use& u : j.uses) used[u.link] = 0.0;
  }
  std::vector<bool> fixed(jobs_.size(), false);
  for (size_t left = jobs_.size(); left > 0;) {
    std::map<std::int64_t, double> weight;  // of the jobs still rising, per link
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (fixed[i]) continue;
      for (const Use& u : jobs_[i].uses) weight[u.link] += u.weight;
    }
    double fullest = std::numeric_limits<double>::infinity();  // the level a link fills at
    for (const auto& [link, w] : weight) {
      if (w > 0) fullest = std::min(fullest, std::max(0.0, 1.0 - used[link]) / w);
    }
    // No job runs faster than at full speed: below a level of 1 the fullest links hold theirs.
    const bool capped = fullest >= 1.0;
    const double level = std::min(fullest, 1.0);
    const auto full = [&](const Use& u) {
      const double w = weight[u.link];
      return w > 0 && std::max(0.0, 1.0 - used[u.link]) / w <= level * (1 + 1e-12);
    };
    bool any = false;
    for (size_t i = 0; i < jobs_.size(); ++i) {
      if (fixed[i]) continue;
      const auto& uses = jobs_[i].uses;
      if (!capped && std::none_of(uses.begin(), uses.end(), full)) continue;
      fixed[i] = true;
      any = true;
      --left;
      jobs_[i].rate = level;
      for (const Use& u : uses) used[u.link] += level * u.weight;
    }
    if (!any) break;  // cannot happen: the fullest link holds at least one rising job
  }

  double first = std::numeric_limits<double>::infinity();
  for (const Job& j : jobs_) {
    if (j.rate > 0) first = std::min(first, j.remaining / j.rate);
  }
  if (!std::isfinite(first)) return;  // nothing moves
  const double wait = std::max(0.0, std::ceil(first - kRounding));
  const TimeNs at = wait >= static_cast<double>(kTimeLimit - loop_.now())
                        ? kTimeLimit  // the loop refuses it with its error
                        : loop_.now() + static_cast<TimeNs>(wait);
  next_done_ = loop_.schedule_at(at, [this] { complete_due(); });
}

void FairShare::complete_due() {
  next_done_ = EventId{};
  advance();
  // Take the finished jobs out before their callbacks run: one may start a job here.
  std::vector<std::function<void()>> finished;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (it->remaining >= kDone) {
      ++it;
      continue;
    }
    finished.push_back(std::move(it->done));
    it = jobs_.erase(it);
  }
  reallocate();
  for (auto& done : finished) done();
}

}  // namespace fleetsim
