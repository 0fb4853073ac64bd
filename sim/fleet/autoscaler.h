// Horizontal autoscaling of the fleet's pods as a Kubernetes HorizontalPodAutoscaler does it:
// a metric scraped from the pods, the HPA's replica calculation every sync period, its
// stabilization windows and rate limits, and a pod lifecycle with real delays (a GPU to be
// provisioned, the model to load, endpoints to propagate, a graceful drain on the way out).
// Sources: kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go and
// horizontal.go; the HPA documentation's "Algorithm details" and "Default Behavior".
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/event_loop.h"
#include "sim/fleet/metrics.h"
#include "sim/fleet/observer.h"
#include "sim/fleet/pod_schedule.h"
#include "sim/params.h"

namespace fleetsim {

class Gateway;
class Pod;

enum class ScaleMetric { kNone, kWaiting, kRunning, kKvUsage, kInflight, kRequestRate };

struct AutoscalerConfig {
  ScaleMetric metric = ScaleMetric::kNone;
  std::string metric_name = "none";
  double target = 1;
  std::int32_t min_pods = 1, max_pods = 1;
  TimeNs sync_period = 0, scrape_interval = 0, rate_window = 0;
  double tolerance = 0.1;
  TimeNs up_window = 0, down_window = 0, policy_period = 0;
  double up_max_percent = 100, down_max_percent = 100;
  std::int32_t up_max_pods = 4;
  TimeNs provision = 0, load_time = 0, prestop = 0, grace = 0;
  // Scale to zero (min_pods 0), as KEDA does around the HPA: it checks its trigger every
  // `activation_interval`, scales 0 -> 1 when the trigger is active and N -> 0 when it has been
  // inactive for `cooldown`; the HPA it manages keeps at least one pod.
  TimeNs activation_interval = 0, cooldown = 0;
  // KEDA's cron scaler beside the metric: pods the Deployment wants at least, by time. The HPA
  // follows the higher of the two recommendations; with no metric, the schedule alone.
  PodSchedule schedule;
  std::string schedule_text;
  // A prefill pool of a disaggregating gateway: prompts the decode pods computed for want of a
  // prefill pod also make it in use (nothing is sent to a prefill pool at zero).
  bool prefill_pool = false;
};

// The `autoscaling` section (scenario-wide, overridable per arm).
const ParamSpec& autoscaling_spec();
bool autoscaling_enabled(const Params& p);
// The section's `schedule`; `where` leads its errors (file:line: autoscaling.schedule).
PodSchedule pod_schedule_from(const Params& p, const std::string& where);
AutoscalerConfig autoscaler_config_from(const Params& p);
// The index of the pool that scales among the fleet's pools (fleet_pools order), -1 when the
// section scales nothing or names no such pool (the scenario loader reports the latter).
int autoscaled_pool(const Params& autoscaling, const std::vector<std::string>& pool_names);

// A count of pods holding a GPU that steps over time: its integral and its peak.
class PodClock {
 public:
  explicit PodClock(std::int32_t pods = 0) : pods_(pods), peak_(pods) {}
  void step(TimeNs t, std::int32_t delta);
  std::int32_t pods() const { return pods_; }
  // pod_seconds, mean_pods and peak_pods of a run that ends at `end`.
  PodTime at_end(TimeNs end) const;

 private:
  std::int32_t pods_, peak_;
  double seconds_ = 0;
  TimeNs last_ = 0;
};

// One pod as the HPA's replica calculation sees it.
enum class MetricPod {
  kReady,    // running, ready and scraped: `value` counts
  kMissing,  // running but no sample yet (model loading, or ready since the last scrape)
  kPending,  // not running yet (no GPU, image pulling): ignored unless scaling up
};

// The HPA's replica calculation for a Pods metric with an AverageValue target
// (replica_calculator.go, calcPlainMetricReplicas): the usage ratio over ready pods; pods
// without metrics count as at target when scaling down and as 0 when scaling up, pending pods
// as 0 when scaling up; no change inside the tolerance or when that filling reverses the
// direction. `current` is the Deployment's replicas.
std::int32_t hpa_replicas(const std::vector<std::pair<MetricPod, double>>& pods,
                          std::int32_t current, double target, double tolerance);

// The HPA's behavior (horizontal.go): stabilization windows over past recommendations, then
// the scaling policies' rate limits and the min/max bounds. Default policies: up by
// max(100%, 4 pods) per 15 s, down by 100% per 15 s, down-stabilization 300 s.
class HpaBehavior {
 public:
  explicit HpaBehavior(const AutoscalerConfig& c) : c_(c) {}
  // The replicas to set now, given the current ones and the calculation's recommendation.
  std::int32_t decide(TimeNs now, std::int32_t current, std::int32_t recommendation);

 private:
  const AutoscalerConfig& c_;
  std::deque<std::pair<TimeNs, std::int32_t>> recommendations_;
  std::deque<std::pair<TimeNs, std::int32_t>> changes_;  // (time, replicas added or removed)
};

// A pool of fixed size in the same terms: `pods` held from the start to `end`.
PoolScaling fixed_pool_scaling(const std::string& pool, std::int32_t pods, TimeNs end);

// Drives the lifecycle of the pods it manages (one pool's, by pod index) from the HPA's
// decisions. The first `initial` of them start Ready, the others absent. `fleet` counts the
// pods holding a GPU across every pool; each autoscaler steps it with its own.
class Autoscaler : public FleetObserver {
 public:
  Autoscaler(const AutoscalerConfig& config, EventLoop& loop,
             std::vector<std::unique_ptr<Pod>>& pods, Gateway& gateway, std::vector<int> managed,
             std::int32_t initial, PodClock& fleet);
  // Takes the absent pods out, then schedules scrapes and syncs (background events).
  void start();
  // A request sent to a pod, or a prefill leg sent to a prefill pod: what request_rate counts.
  void on_dispatch(const Request& r, int pod, TimeNs t) override;
  void on_prefill_leg(const Request& leg, int pod, TimeNs t) override;
  PoolScaling summary(const std::string& pool, TimeNs end) const;

 private:
  enum class State { kAbsent, kProvisioning, kLoading, kReady, kDraining };
  // A replica of the Deployment: on its way or serving (not absent, not draining).
  static bool is_replica(State s) {
    return s == State::kProvisioning || s == State::kLoading || s == State::kReady;
  }
  // One managed pod (`pod` is its index in the fleet); functions below take slot numbers.
  struct Slot {
    int pod = 0;
    State state = State::kAbsent;
    TimeNs since = 0;
    std::uint64_t generation = 0;  // bumped by every transition a timer may race with
    // The last scrape of this pod, if it was ready then.
    std::optional<double> sample;
    std::int64_t dispatched = 0;
    std::deque<std::pair<TimeNs, std::int64_t>> dispatch_history;
  };
  void scrape();
  void sync();
  // KEDA's activation check (scale to zero only).
  void activate();
  bool active() const;
  Pod& pod_at(int slot) const;
  double gauge(int slot) const;
  void set_state(int slot, State s);
  void add_pod(int slot);
  void remove_pod(int slot);
  std::int32_t replicas() const;
  std::int32_t count(State s) const;

  AutoscalerConfig config_;
  AutoscalerConfig hpa_config_;  // config_ with the HPA's own floor of one pod under scale to zero
  EventLoop& loop_;
  std::vector<std::unique_ptr<Pod>>& pods_;
  Gateway& gateway_;
  std::int32_t initial_;
  HpaBehavior behavior_;
  std::vector<Slot> slots_;
  std::vector<int> slot_of_;  // by pod index: its slot, -1 for pods of other pools
  PodClock provisioned_;
  PodClock& fleet_;
  std::int32_t added_ = 0, removed_ = 0;
  std::int64_t ups_ = 0, downs_ = 0;
  TimeNs last_active_ = 0;
  std::int64_t dispatched_at_check_ = 0, missed_at_check_ = 0;
  std::vector<AutoscalingPoint> timeline_;
};

}  // namespace fleetsim
