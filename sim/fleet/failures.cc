#include "sim/fleet/failures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace fleetsim {
namespace {

double secs(TimeNs t) { return std::round(ns_to_sec(t) * 1e6) / 1e6; }

}  // namespace

int FailureTracker::add_fault(const std::string& kind, const std::string& target, TimeNs at,
                              std::vector<int> pods) {
  faults_.push_back({kind, target, at, std::move(pods), -1});
  return static_cast<int>(faults_.size()) - 1;
}

void FailureTracker::restarted(int fault, TimeNs ready_at) {
  faults_[static_cast<size_t>(fault)].back_at = ready_at;
}

void FailureTracker::on_dispatch(const Request&, int pod, TimeNs t) {
  dispatches_.emplace_back(t, pod);
}

void FailureTracker::on_finished(const Request&, int pod, Outcome outcome, TimeNs t) {
  attempts_.push_back({t, pod, outcome});
}

void FailureTracker::on_health_change(int pod, bool healthy, TimeNs t, int replica) {
  health_changes_.push_back({t, pod, healthy, replica});
}

nlohmann::json FailureTracker::to_json(std::int64_t lost, std::int64_t retries, TimeNs end) const {
  nlohmann::json by_class = {{"http_502", 0}, {"http_503", 0}, {"timeout", 0}, {"mid_stream", 0},
                             {"http_400", 0}, {"http_500", 0}, {"http_429", 0}};
  TimeNs first_err = -1, last_err = -1;
  for (const auto& a : attempts_) {
    if (a.outcome == Outcome::kOk) continue;
    by_class[outcome_name(a.outcome)] = by_class[outcome_name(a.outcome)].get<std::int64_t>() + 1;
    if (first_err < 0) first_err = a.t;
    last_err = a.t;
  }
  nlohmann::json window = nullptr;
  if (first_err >= 0) {
    window = {{"first_s", secs(first_err)},
              {"last_s", secs(last_err)},
              {"duration_s", secs(last_err - first_err)}};
  }

  nlohmann::json faults = nlohmann::json::array();
  const auto n_pods = static_cast<size_t>(num_pods_);
  for (const Fault& f : faults_) {
    nlohmann::json detection = nullptr, recovery = nullptr, all_detected = nullptr;
    TimeNs detected = -1;
    // The first replica to mark a victim down, and when every replica has marked one.
    std::vector<bool> replica_detected(static_cast<size_t>(beliefs_), false);
    int detecting = 0;
    for (const HealthChange& c : health_changes_) {
      if (c.t < f.at || c.up || !std::count(f.pods.begin(), f.pods.end(), c.pod)) continue;
      if (detected < 0) {
        detected = c.t;
        detection = secs(c.t - f.at);
      }
      if (!replica_detected[static_cast<size_t>(c.replica)]) {
        replica_detected[static_cast<size_t>(c.replica)] = true;
        if (++detecting == beliefs_) {
          all_detected = secs(c.t - f.at);
          break;
        }
      }
    }
    if (f.back_at >= 0) {
      for (const auto& a : attempts_) {
        const bool on_victim = f.pods.empty() || std::count(f.pods.begin(), f.pods.end(), a.pod);
        if (a.t >= f.back_at && a.outcome == Outcome::kOk && on_victim) {
          recovery = secs(a.t - f.back_at);
          break;
        }
      }
    }
    std::vector<std::int64_t> before(n_pods, 0), after(n_pods, 0);
    for (const auto& [t, pod] : dispatches_) {
      if (pod < 0 || static_cast<size_t>(pod) >= n_pods) continue;
      ++(t < f.at ? before : after)[static_cast<size_t>(pod)];
    }
    std::int64_t errors_until_detected = 0;
    for (const auto& a : attempts_) {
      if (a.outcome != Outcome::kOk && a.t >= f.at && (detected < 0 || a.t <= detected)) {
        ++errors_until_detected;
      }
    }
    nlohmann::json fault = {
        {"kind", f.kind},
        {"target", f.target},
        {"pods", f.pods},
        {"at_s", secs(f.at)},
        {"detection_latency_s", detection},
        {"errors_before_detection", errors_until_detected},
        {"back_at_s", f.back_at >= 0 ? nlohmann::json(secs(f.back_at)) : nullptr},
        {"recovery_s", recovery},
        {"requests_per_pod_before", before},
        {"requests_per_pod_after", after}};
    // Replicas with beliefs of their own stop sending to a dead pod one by one.
    if (beliefs_ > 1) fault["detection_latency_all_replicas_s"] = all_detected;
    faults.push_back(std::move(fault));
  }

  // One row a second: outcomes of attempts that ended in it, and pods believed healthy at its end.
  // Quiet seconds (nothing ended, the healthy count as in the row before) are left out, so a
  // request held for days by a black hole does not write a row for each of its seconds.
  nlohmann::json timeline = nlohmann::json::array();
  const TimeNs bucket = kNsPerSec;
  const std::int64_t buckets = end / bucket + 1;
  std::vector<std::int64_t> ok(static_cast<size_t>(buckets), 0),
      err(static_cast<size_t>(buckets), 0);
  for (const auto& a : attempts_) {
    const auto b = static_cast<size_t>(std::min<std::int64_t>(a.t / bucket, buckets - 1));
    ++(a.outcome == Outcome::kOk ? ok : err)[b];
  }
  // A pod counts as healthy while every replica believes it up.
  std::vector<std::vector<bool>> healthy(static_cast<size_t>(beliefs_),
                                         std::vector<bool>(n_pods, true));
  size_t next_change = 0;
  std::int64_t last_up = -1;
  for (std::int64_t b = 0; b < buckets; ++b) {
    const TimeNs bucket_end = (b + 1) * bucket;
    while (next_change < health_changes_.size() && health_changes_[next_change].t < bucket_end) {
      const HealthChange& c = health_changes_[next_change++];
      healthy[static_cast<size_t>(c.replica)][static_cast<size_t>(c.pod)] = c.up;
    }
    std::int64_t up = 0;
    for (size_t pod = 0; pod < n_pods; ++pod) {
      up += std::all_of(healthy.begin(), healthy.end(),
                        [pod](const std::vector<bool>& h) { return h[pod]; });
    }
    const bool quiet = ok[static_cast<size_t>(b)] == 0 && err[static_cast<size_t>(b)] == 0 &&
                       up == last_up && b != 0 && b != buckets - 1;
    last_up = up;
    if (quiet) continue;
    timeline.push_back({{"t_s", b},
                        {"ok", ok[static_cast<size_t>(b)]},
                        {"errors", err[static_cast<size_t>(b)]},
                        {"healthy_pods", up}});
  }
  return {{"errors_by_class", by_class}, {"failure_window", window}, {"requests_lost", lost},
          {"retries", retries},          {"faults", faults},         {"timeline", timeline}};
}

std::vector<std::string> FailureTracker::fail_fast_warnings(TimeNs end) const {
  // Too few requests to tell a pull from chance, under this many sent to the faulted pods.
  constexpr std::int64_t kMinSent = 20;
  std::vector<std::string> out;
  for (const Fault& f : faults_) {
    if (f.pods.empty()) continue;
    const auto faulted = [&f](int pod) {
      return std::count(f.pods.begin(), f.pods.end(), pod) > 0;
    };
    TimeNs until = end;
    for (const HealthChange& c : health_changes_) {
      if (c.t >= f.at && !c.up && faulted(c.pod)) {
        until = c.t;
        break;
      }
    }
    std::int64_t sent = 0, to_faulted = 0, failed = 0;
    for (const auto& [t, pod] : dispatches_) {
      if (t < f.at || t > until) continue;
      ++sent;
      if (faulted(pod)) ++to_faulted;
    }
    for (const Event& a : attempts_) {
      if (a.t >= f.at && a.t <= until && a.outcome != Outcome::kOk && faulted(a.pod)) ++failed;
    }
    const double fair = static_cast<double>(f.pods.size()) / num_pods_;
    const double share = sent > 0 ? static_cast<double>(to_faulted) / static_cast<double>(sent) : 0;
    if (to_faulted < kMinSent || share < 2 * fair || 2 * failed < to_faulted) continue;
    out.push_back(fmt::format(
        "{} failed fast after its {} at {:.1f} s and drew {:.0f}% of the requests routed until {} "
        "(a fair share is {:.0f}%), {} of them failing: the policy sees a pod that refuses "
        "connections as idle. Outlier ejection (gateway.outlier_consecutive_errors, "
        "docs/failures.md) takes such a pod out after a few errors",
        f.target, f.kind, ns_to_sec(f.at), 100 * share,
        until < end
            ? fmt::format("the probes marked it down {:.1f} s later", ns_to_sec(until - f.at))
            : std::string("the run's end"),
        100 * fair, failed));
  }
  return out;
}

}  // namespace fleetsim
