#include "sim/fleet/fair_share.h"

#include <algorithm>
#include <cmath>
#include <limits>
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

  // Dense link indices (keys in order), and each job's uses as (index, weight), flat.
  std::vector<std::int64_t> keys;
  for (const Job& j : jobs_) {
    for (const Use& u : j.uses) keys.push_back(u.link);
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const size_t n = jobs_.size();
  std::vector<std::pair<size_t, double>> uses;
  std::vector<size_t> first_use(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    first_use[i] = uses.size();
    for (const Use& u : jobs_[i].uses) {
      const auto at = std::lower_bound(keys.begin(), keys.end(), u.link) - keys.begin();
      uses.emplace_back(static_cast<size_t>(at), u.weight);
    }
  }
  first_use[n] = uses.size();

  std::vector<double> used(keys.size(), 0.0);  // capacity taken by the jobs already fixed
  std::vector<double> weight(keys.size());     // of the jobs still rising
  std::vector<double> room(keys.size());       // the level at which each link fills
  std::vector<bool> fixed(n, false);
  for (size_t left = n; left > 0;) {
    std::fill(weight.begin(), weight.end(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      if (fixed[i]) continue;
      for (size_t k = first_use[i]; k < first_use[i + 1]; ++k) {
        weight[uses[k].first] += uses[k].second;
      }
    }
    double fullest = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < keys.size(); ++l) {
      room[l] = weight[l] > 0 ? std::max(0.0, 1.0 - used[l]) / weight[l]
                              : std::numeric_limits<double>::infinity();
      fullest = std::min(fullest, room[l]);
    }
    // No job runs faster than at full speed: below a level of 1 the fullest links hold theirs.
    const bool capped = fullest >= 1.0;
    const double level = std::min(fullest, 1.0);
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (fixed[i]) continue;
      bool held = capped;
      for (size_t k = first_use[i]; k < first_use[i + 1] && !held; ++k) {
        held = room[uses[k].first] <= level * (1 + 1e-12);
      }
      if (!held) continue;
      fixed[i] = true;
      any = true;
      --left;
      jobs_[i].rate = level;
      for (size_t k = first_use[i]; k < first_use[i + 1]; ++k) {
        used[uses[k].first] += level * uses[k].second;
      }
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
