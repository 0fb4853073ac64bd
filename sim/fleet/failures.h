// What an SRE asks after a fault: errors by class, the failure window, how long the gateway took
// to notice (detection), how long until the pod served again (recovery), requests lost, and
// where requests went before and after. Built from observer signals.
#pragma once

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/fleet/observer.h"

namespace fleetsim {

class FailureTracker : public FleetObserver {
 public:
  // `beliefs`: the gateway replicas that keep a health belief of their own (1 when they share
  // one).
  explicit FailureTracker(int num_pods, int beliefs = 1)
      : num_pods_(num_pods), beliefs_(std::max(1, beliefs)) {}

  // Registers a scheduled fault; returns its id.
  int add_fault(const std::string& kind, const std::string& target, TimeNs at,
                std::vector<int> pods);
  // The fault's pods (or the picker) are back, or will be ready at `ready_at`.
  void restarted(int fault, TimeNs ready_at);

  void on_dispatch(const Request& r, int pod, TimeNs t) override;
  void on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) override;
  void on_health_change(int pod, bool healthy, TimeNs t, int replica) override;

  // The `failures` section of an arm's result. `lost` = requests whose last attempt failed,
  // `retries` = attempts beyond the first, over the whole arm.
  nlohmann::json to_json(std::int64_t lost, std::int64_t retries, TimeNs end) const;
  // A hazard the figures alone hide: a faulted pod that fails fast (refuses connections) looks
  // idle to a policy that scores load, and draws more than its share of the traffic until the
  // probes mark it down (or until `end`). One sentence per such fault; none otherwise.
  std::vector<std::string> fail_fast_warnings(TimeNs end) const;

  struct Fault {
    std::string kind, target;
    TimeNs at = 0;
    std::vector<int> pods;
    TimeNs back_at = -1;  // restart ready time / end of the outage
  };
  // Every scheduled fault, those after the run's end too.
  const std::vector<Fault>& faults() const { return faults_; }

 private:
  struct Event {
    TimeNs t;
    int pod;
    Outcome outcome;
  };
  std::vector<Fault> faults_;
  std::vector<Event> attempts_;  // every attempt's end
  std::vector<std::pair<TimeNs, int>> dispatches_;
  struct HealthChange {
    TimeNs t;
    int pod;
    bool up;
    int replica;
  };
  std::vector<HealthChange> health_changes_;
  int num_pods_;
  int beliefs_;
};

}  // namespace fleetsim
