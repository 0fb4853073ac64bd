#include "sim/fleet/pod_schedule.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "sim/errors.h"

namespace fleetsim {
namespace {

// Times past this (~31 years) would not fit the simulated clock.
constexpr double kMaxTimeS = 1e9;

bool parse_time(const std::string& s, double& out) {
  return parse_finite(s, out) && out >= 0 && out <= kMaxTimeS;
}

bool parse_pods(const std::string& s, std::int64_t& out) {
  const char* end = s.data() + s.size();
  const auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return !s.empty() && ec == std::errc() && ptr == end;
}

}  // namespace

PodSchedule PodSchedule::parse(const std::string& text, double period_s, std::int64_t max_pods,
                               const std::string& where) {
  PodSchedule s;
  auto fail = [&](const std::string& why) {
    throw ScenarioError(where + ": " + why + " in '" + text +
                        "'; expected 'time_s:pods, time_s:pods, ...' with increasing times and "
                        "pods in [0, max_pods = " +
                        std::to_string(max_pods) + "], e.g. '0:2, 3000:8, 6000:2'");
  };
  if (period_s < 0 || period_s > kMaxTimeS) fail("a period must lie in [0, 1e9] s");
  s.period_ = sec_to_ns(period_s);
  for (const std::string& item : split_trimmed(text, ',')) {
    const auto parts = split_trimmed(item, ':');
    double t = 0;
    std::int64_t pods = 0;
    if (parts.size() != 2 || !parse_time(parts[0], t) || !parse_pods(parts[1], pods)) {
      fail("'" + item + "' is not time_s:pods (a time of 0 to 1e9 s, a whole number of pods)");
    }
    if (pods < 0 || pods > max_pods) fail("the pods of '" + item + "' are outside [0, max_pods]");
    const TimeNs at = sec_to_ns(t);
    if (!s.points_.empty() && at <= s.points_.back().first) {
      fail("times must increase at '" + item + "'");
    }
    if (s.period_ > 0 && at >= s.period_) {
      std::ostringstream period;
      period << period_s;
      fail("'" + item + "' lies past the period (schedule_period_s " + period.str() + ")");
    }
    s.points_.emplace_back(at, static_cast<std::int32_t>(pods));
  }
  if (s.points_.empty()) fail("no points");
  return s;
}

std::int32_t PodSchedule::at(TimeNs t) const {
  const TimeNs in = period_ > 0 ? t % period_ : t;
  const auto after = std::upper_bound(
      points_.begin(), points_.end(), in,
      [](TimeNs v, const std::pair<TimeNs, std::int32_t>& p) { return v < p.first; });
  if (after != points_.begin()) return std::prev(after)->second;
  // Before the first point: nothing wanted, except in a later period, where the previous
  // period's last step still holds.
  return period_ > 0 && t >= period_ && !points_.empty() ? points_.back().second : 0;
}

TimeNs PodSchedule::next_step(TimeNs t) const {
  const TimeNs base = period_ > 0 ? t - t % period_ : 0;
  const TimeNs in = t - base;
  for (const auto& [at, pods] : points_) {
    if (at > in) return base + at;
  }
  return period_ > 0 && !points_.empty() ? base + period_ + points_.front().first : kTimeLimit;
}

}  // namespace fleetsim
