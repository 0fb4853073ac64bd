// A schedule of pods over time, as KEDA's cron scaler gives an HPA: from each point's time to
// the next, the Deployment wants at least that many pods (a step, not a ramp). Written
// "time_s:pods, time_s:pods, ..." (e.g. "0:2, 3000:8, 6000:2"); before the first point it
// wants none. With a period the schedule repeats (86400: the same hours every day).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/time.h"

namespace fleetsim {

class PodSchedule {
 public:
  PodSchedule() = default;
  // Throws ScenarioError starting with `where` when the text is not a list of increasing times
  // with pod counts in [0, max_pods], or a point lies past the period.
  static PodSchedule parse(const std::string& text, double period_s, std::int64_t max_pods,
                           const std::string& where);

  bool empty() const { return points_.empty(); }
  std::int32_t at(TimeNs t) const;
  // The first step after `t` (kTimeLimit when none comes).
  TimeNs next_step(TimeNs t) const;

 private:
  std::vector<std::pair<TimeNs, std::int32_t>> points_;  // increasing times
  TimeNs period_ = 0;                                    // 0 = no repetition
};

}  // namespace fleetsim
