#include "sim/fleet/autoscaler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/errors.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/pod.h"

namespace fleetsim {
namespace {

struct MetricName {
  const char* name;
  ScaleMetric metric;
};
constexpr MetricName kMetrics[] = {
    {"none", ScaleMetric::kNone},         {"waiting", ScaleMetric::kWaiting},
    {"running", ScaleMetric::kRunning},   {"kv_usage", ScaleMetric::kKvUsage},
    {"inflight", ScaleMetric::kInflight}, {"request_rate", ScaleMetric::kRequestRate},
};

}  // namespace

const ParamSpec& autoscaling_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("metric", "none",
                "what the HPA averages over the ready pods: none (a static fleet of fleet.pods), "
                "waiting (vllm:num_requests_waiting), running (vllm:num_requests_running), "
                "kv_usage (vllm:kv_cache_usage_perc, 0 to 1), inflight (the gateway's requests "
                "in flight to the pod), request_rate (requests sent to the pod per second, a "
                "rate over rate_window_s)",
                {"none", "waiting", "running", "kv_usage", "inflight", "request_rate"})
          .real("target", 5, "the metric's target average per pod (an AverageValue target)", 1e-9)
          .text("pool", "",
                "the pool (a fleet.pools name) whose Deployment scales; empty = the fleet's only "
                "pool")
          .integer("min_pods", 1,
                   "minReplicas; 0 = scale to zero as KEDA does (activation_interval_s, "
                   "cooldown_s), which needs the gateway to hold requests while no pod is there "
                   "(gateway.hold_for_endpoints_s)",
                   0, 100000)
          .integer("max_pods", 8,
                   "maxReplicas; this many pods are built, those above the pool's pods (fleet.pods "
                   "without pools) start absent",
                   1, 100000)
          .real("sync_period_s", 15,
                "how often the HPA recomputes (kube-controller-manager "
                "--horizontal-pod-autoscaler-sync-period, 15 s)",
                0.001)
          .real("scrape_interval_s", 15,
                "how often the pods' metrics are scraped; the HPA reads the latest scrape "
                "(Prometheus' own default is 60 s, kube-prometheus setups use 15 to 30 s)",
                0.001)
          .real("rate_window_s", 60, "request_rate only: the rate's window (rate(x[1m]))", 0.001)
          .real("tolerance", 0.1,
                "no change while |metric / target - 1| is within this "
                "(--horizontal-pod-autoscaler-tolerance)",
                0, 10)
          .real("scale_up_stabilization_s", 0,
                "scale up to the lowest recommendation of this window (behavior.scaleUp "
                "stabilizationWindowSeconds, 0)",
                0)
          .real("scale_down_stabilization_s", 300,
                "scale down to the highest recommendation of this window (behavior.scaleDown "
                "stabilizationWindowSeconds, 300)",
                0)
          .real("scale_up_max_percent", 100,
                "scale-up policy: at most this percent more pods per policy period (100)", 0)
          .integer("scale_up_max_pods", 4,
                   "scale-up policy: or at most this many more pods per period, whichever "
                   "allows more (selectPolicy Max; 4)",
                   0, 100000)
          .real("scale_down_max_percent", 100,
                "scale-down policy: at most this percent fewer pods per policy period (100)", 0,
                100)
          .real("policy_period_s", 15, "the policies' periodSeconds (15)", 0.001)
          .real("provision_s", 0,
                "from the HPA's decision to the pod's start: a GPU node to provision (Karpenter "
                "or a cluster autoscaler take minutes) and the image to pull; 0 = a free GPU",
                0)
          .real("load_time_s", 60,
                "model-load time of a new pod before it is Ready (weights, torch.compile, CUDA "
                "graphs), as for a restarted pod in faults",
                0)
          .real("prestop_s", 0,
                "a preStop sleep: the pod keeps serving this long after it leaves the endpoints "
                "before the server is told to stop (0 = none, Kubernetes' default)",
                0)
          .real("activation_interval_s", 30,
                "min_pods 0 only: how often KEDA checks whether the pool is in use: requests "
                "held at the gateway, in flight to the pool or sent to it since the last check "
                "(a ScaledObject's pollingInterval, 30)",
                0.001)
          .real("cooldown_s", 300,
                "min_pods 0 only: unused this long, the pool scales to zero (a ScaledObject's "
                "cooldownPeriod, 300)",
                0)
          .text("schedule", "",
                "pods wanted at least, by time, as KEDA's cron scaler gives them: "
                "'time_s:pods, ...', each from its time to the next (e.g. '0:2, 3000:8, "
                "6000:2'; 0 before the first). The HPA follows the higher of this and the "
                "metric's recommendation, through the same stabilization and rate limits; with "
                "metric none, the schedule alone. Empty = none")
          .real("schedule_period_s", 0,
                "the schedule repeats with this period (86400: the same hours every day); 0 = "
                "once",
                0, 1e9)
          .real("termination_grace_s", 30,
                "terminationGracePeriodSeconds: requests still running this long after the "
                "scale-down are killed (30)",
                0);
  return kSpec;
}

bool autoscaling_enabled(const Params& p) {
  return p.get_string("metric") != "none" || !p.get_string("schedule").empty();
}

PodSchedule pod_schedule_from(const Params& p, const std::string& where) {
  if (p.get_string("schedule").empty()) return {};
  return PodSchedule::parse(p.get_string("schedule"), p.get_double("schedule_period_s"),
                            p.get_int("max_pods"), where);
}

AutoscalerConfig autoscaler_config_from(const Params& p) {
  AutoscalerConfig c;
  c.metric_name = p.get_string("metric");
  for (const auto& m : kMetrics) {
    if (c.metric_name == m.name) c.metric = m.metric;
  }
  c.target = p.get_double("target");
  c.min_pods = static_cast<std::int32_t>(p.get_int("min_pods"));
  c.max_pods = static_cast<std::int32_t>(p.get_int("max_pods"));
  c.sync_period = sec_to_ns(p.get_double("sync_period_s"));
  c.scrape_interval = sec_to_ns(p.get_double("scrape_interval_s"));
  c.rate_window = sec_to_ns(p.get_double("rate_window_s"));
  c.tolerance = p.get_double("tolerance");
  c.up_window = sec_to_ns(p.get_double("scale_up_stabilization_s"));
  c.down_window = sec_to_ns(p.get_double("scale_down_stabilization_s"));
  c.up_max_percent = p.get_double("scale_up_max_percent");
  c.up_max_pods = static_cast<std::int32_t>(p.get_int("scale_up_max_pods"));
  c.down_max_percent = p.get_double("scale_down_max_percent");
  c.policy_period = sec_to_ns(p.get_double("policy_period_s"));
  c.provision = sec_to_ns(p.get_double("provision_s"));
  c.load_time = sec_to_ns(p.get_double("load_time_s"));
  c.prestop = sec_to_ns(p.get_double("prestop_s"));
  c.grace = sec_to_ns(p.get_double("termination_grace_s"));
  c.activation_interval = sec_to_ns(p.get_double("activation_interval_s"));
  c.cooldown = sec_to_ns(p.get_double("cooldown_s"));
  c.schedule = pod_schedule_from(p, "autoscaling.schedule");
  c.schedule_text = p.get_string("schedule");
  return c;
}

int autoscaled_pool(const Params& autoscaling, const std::vector<std::string>& pool_names) {
  if (!autoscaling_enabled(autoscaling)) return -1;
  const std::string& name = autoscaling.get_string("pool");
  if (pool_names.size() == 1 && (name.empty() || name == pool_names.front())) return 0;
  const auto it = std::find(pool_names.begin(), pool_names.end(), name);
  return it == pool_names.end() ? -1 : static_cast<int>(it - pool_names.begin());
}

std::int32_t hpa_replicas(const std::vector<std::pair<MetricPod, double>>& pods,
                          std::int32_t current, double target, double tolerance) {
  double sum = 0;
  std::int32_t ready = 0, missing = 0, pending = 0;
  for (const auto& [kind, value] : pods) {
    if (kind == MetricPod::kReady) {
      sum += value;
      ++ready;
    } else if (kind == MetricPod::kMissing) {
      ++missing;
    } else {
      ++pending;
    }
  }
  if (ready == 0) return current;  // no metrics: the HPA skips the sync
  const double ratio = sum / (target * ready);
  const bool up_with_pending = pending > 0 && ratio > 1.0;
  if (!up_with_pending && missing == 0) {
    if (std::abs(1.0 - ratio) <= tolerance) return current;
    return static_cast<std::int32_t>(std::ceil(ratio * ready));
  }
  // Fill in the pods without metrics: at target when scaling down, 0 when scaling up; pending
  // pods join only when scaling up, at 0.
  std::int32_t counted = ready + missing;
  if (ratio < 1.0) sum += target * missing;
  if (up_with_pending) counted += pending;
  const double filled = sum / (target * counted);
  if (std::abs(1.0 - filled) <= tolerance || (ratio < 1.0 && filled > 1.0) ||
      (ratio > 1.0 && filled < 1.0)) {
    return current;
  }
  const auto replicas = static_cast<std::int32_t>(std::ceil(filled * counted));
  if ((filled < 1.0 && replicas > current) || (filled > 1.0 && replicas < current)) return current;
  return replicas;
}

std::int32_t HpaBehavior::decide(TimeNs now, std::int32_t current, std::int32_t recommendation) {
  // Stabilization: the lowest recommendation of the up window, the highest of the down window.
  const TimeNs keep = std::max(c_.up_window, c_.down_window);
  while (!recommendations_.empty() && recommendations_.front().first < now - keep) {
    recommendations_.pop_front();
  }
  std::int32_t up = recommendation, down = recommendation;
  for (const auto& [t, rec] : recommendations_) {
    if (t > now - c_.up_window) up = std::min(up, rec);
    if (t > now - c_.down_window) down = std::max(down, rec);
  }
  recommendations_.emplace_back(now, recommendation);
  std::int32_t desired = current;
  if (desired < up) desired = up;
  if (desired > down) desired = down;

  // Rate limits, from the replicas at the start of the policy period.
  while (!changes_.empty() && changes_.front().first <= now - c_.policy_period) {
    changes_.pop_front();
  }
  std::int32_t added = 0, removed = 0;
  for (const auto& [t, delta] : changes_) (delta > 0 ? added : removed) += std::abs(delta);
  if (desired > current) {
    const std::int32_t start = current - added;
    const auto by_percent =
        static_cast<std::int32_t>(std::ceil(start * (1.0 + c_.up_max_percent / 100.0)));
    const std::int32_t limit = std::max({by_percent, start + c_.up_max_pods, current});
    desired = std::min({desired, limit, c_.max_pods});
  } else if (desired < current) {
    const std::int32_t start = current + removed;
    const auto limit = static_cast<std::int32_t>(start * (1.0 - c_.down_max_percent / 100.0));
    desired = std::max({desired, std::min(limit, current), c_.min_pods});
  }
  desired = std::clamp(desired, c_.min_pods, c_.max_pods);
  if (desired != current) changes_.emplace_back(now, desired - current);
  return desired;
}

Autoscaler::Autoscaler(const AutoscalerConfig& config, EventLoop& loop,
                       std::vector<std::unique_ptr<Pod>>& pods, Gateway& gateway,
                       std::vector<int> managed, std::int32_t initial, PodClock& fleet)
    : config_(config),
      hpa_config_(config),
      loop_(loop),
      pods_(pods),
      gateway_(gateway),
      initial_(initial),
      behavior_(hpa_config_),
      slots_(managed.size()),
      slot_of_(pods.size(), -1),
      fleet_(fleet) {
  hpa_config_.min_pods = std::max(1, config_.min_pods);
  for (size_t k = 0; k < managed.size(); ++k) {
    slots_[k].pod = managed[k];
    slot_of_[static_cast<size_t>(managed[k])] = static_cast<int>(k);
  }
}

Pod& Autoscaler::pod_at(int slot) const {
  return *pods_[static_cast<size_t>(slots_[static_cast<size_t>(slot)].pod)];
}

void Autoscaler::start() {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (static_cast<std::int32_t>(i) < initial_) {
      set_state(static_cast<int>(i), State::kReady);
    } else {
      // Not created yet: no process, not in the Service's endpoints.
      pod_at(static_cast<int>(i)).crash(PodHealth::kRefusing);
      gateway_.absent_at_start(slots_[i].pod);
    }
  }
  loop_.schedule_background_in(config_.scrape_interval, [this] { scrape(); });
  loop_.schedule_background_in(config_.sync_period, [this] { sync(); });
  if (config_.min_pods == 0) {
    loop_.schedule_background_in(config_.activation_interval, [this] { activate(); });
  }
}

bool Autoscaler::active() const {
  if (config_.schedule.at(loop_.now()) > 0) return true;
  // Requests held for another pool (a tier whose pods are elsewhere) do not wake this one.
  if (!slots_.empty() && gateway_.held_for_pool(gateway_.pool_of(slots_.front().pod)) > 0) {
    return true;
  }
  std::int64_t dispatched = 0;
  for (const Slot& s : slots_) {
    if (gateway_.inflight(s.pod) > 0) return true;
    dispatched += s.dispatched;
  }
  if (config_.prefill_pool && gateway_.missed_prefills() > missed_at_check_) return true;
  return dispatched > dispatched_at_check_;
}

void Autoscaler::activate() {
  loop_.schedule_background_in(config_.activation_interval, [this] { activate(); });
  const TimeNs now = loop_.now();
  const bool in_use = active();
  dispatched_at_check_ = 0;
  for (const Slot& s : slots_) dispatched_at_check_ += s.dispatched;
  missed_at_check_ = gateway_.missed_prefills();
  const std::int32_t current = replicas();
  if (in_use) last_active_ = now;
  if (current == 0 && in_use) {
    ++ups_;
    const auto absent = std::find_if(slots_.begin(), slots_.end(),
                                     [](const Slot& s) { return s.state == State::kAbsent; });
    // Every slot still draining: the new pod waits for the next check.
    if (absent != slots_.end()) add_pod(static_cast<int>(absent - slots_.begin()));
  } else if (current > 0 && !in_use && now - last_active_ >= config_.cooldown) {
    ++downs_;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (is_replica(slots_[i].state)) remove_pod(static_cast<int>(i));
    }
  }
}

void Autoscaler::on_dispatch(const Request&, int pod, TimeNs) {
  const int slot = slot_of_[static_cast<size_t>(pod)];
  if (slot >= 0) ++slots_[static_cast<size_t>(slot)].dispatched;
}

void Autoscaler::on_prefill_leg(const Request& leg, int pod, TimeNs t) { on_dispatch(leg, pod, t); }

double Autoscaler::gauge(int slot) const {
  const Pod& p = pod_at(slot);
  switch (config_.metric) {
    case ScaleMetric::kWaiting:
      return p.engine().num_waiting();
    case ScaleMetric::kRunning:
      return p.engine().num_running();
    case ScaleMetric::kKvUsage:
      return p.engine().cache().usage();
    case ScaleMetric::kInflight:
      return gateway_.inflight(slots_[static_cast<size_t>(slot)].pod);
    case ScaleMetric::kRequestRate: {
      // rate(): the increase over the window's samples, per second of what they span.
      const Slot& s = slots_[static_cast<size_t>(slot)];
      if (s.dispatch_history.size() < 2) return std::numeric_limits<double>::quiet_NaN();
      const auto& [t0, c0] = s.dispatch_history.front();
      const auto& [t1, c1] = s.dispatch_history.back();
      return static_cast<double>(c1 - c0) / ns_to_sec(t1 - t0);
    }
    case ScaleMetric::kNone:
      break;
  }
  return 0;
}

void Autoscaler::scrape() {
  loop_.schedule_background_in(config_.scrape_interval, [this] { scrape(); });
  const TimeNs now = loop_.now();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    s.dispatch_history.emplace_back(now, s.dispatched);
    while (s.dispatch_history.size() > 2 &&
           s.dispatch_history[1].first <= now - config_.rate_window) {
      s.dispatch_history.pop_front();
    }
    s.sample.reset();
    if (s.state != State::kReady || !pod_at(static_cast<int>(i)).ready()) continue;
    const double v = gauge(static_cast<int>(i));
    if (!std::isnan(v)) s.sample = v;
  }
}

std::int32_t Autoscaler::count(State s) const {
  return static_cast<std::int32_t>(
      std::count_if(slots_.begin(), slots_.end(), [s](const Slot& x) { return x.state == s; }));
}

std::int32_t Autoscaler::replicas() const {
  return static_cast<std::int32_t>(std::count_if(
      slots_.begin(), slots_.end(), [](const Slot& x) { return is_replica(x.state); }));
}

void Autoscaler::sync() {
  loop_.schedule_background_in(config_.sync_period, [this] { sync(); });
  const TimeNs now = loop_.now();
  std::vector<std::pair<MetricPod, double>> view;
  double sum = 0;
  std::int32_t sampled = 0;
  for (const Slot& s : slots_) {
    if (s.state == State::kProvisioning) {
      view.emplace_back(MetricPod::kPending, 0.0);
    } else if (s.state == State::kLoading || (s.state == State::kReady && !s.sample)) {
      view.emplace_back(MetricPod::kMissing, 0.0);
    } else if (s.state == State::kReady) {
      view.emplace_back(MetricPod::kReady, *s.sample);
      sum += *s.sample;
      ++sampled;
    }
  }
  const std::int32_t current = replicas();
  // The HPA takes the highest recommendation of its metrics. A metric without a single sample
  // is unavailable: alone, the HPA leaves the replicas; beside the schedule, it stands at the
  // current replicas, so the HPA does not scale down on the schedule's word alone (as with any
  // unavailable metric).
  const bool metric = config_.metric != ScaleMetric::kNone;
  const bool scheduled = !config_.schedule.empty();
  std::int32_t recommended = current;
  if (metric && sampled > 0) {
    recommended = hpa_replicas(view, current, config_.target, config_.tolerance);
  }
  if (scheduled) {
    recommended = std::max(metric ? recommended : 0, config_.schedule.at(now));
  }
  // At zero replicas the HPA is idle; KEDA's activation brings the first pod back.
  const bool decides = current > 0 && ((metric && sampled > 0) || scheduled);
  const std::int32_t desired = decides ? behavior_.decide(now, current, recommended) : current;
  if (desired > current) {
    ++ups_;
    // The lowest-numbered absent pods; a pod still draining holds its GPU until it exits.
    std::int32_t want = desired - current;
    for (size_t i = 0; i < slots_.size() && want > 0; ++i) {
      if (slots_[i].state == State::kAbsent) {
        add_pod(static_cast<int>(i));
        --want;
      }
    }
  } else if (desired < current) {
    ++downs_;
    // A ReplicaSet deletes pods not yet running before running ones, not-ready before ready,
    // and among equals the most recently started first.
    std::vector<int> order;
    for (size_t i = 0; i < slots_.size(); ++i) {
      if (is_replica(slots_[i].state)) order.push_back(static_cast<int>(i));
    }
    auto rank = [](State st) {
      return st == State::kProvisioning ? 0 : st == State::kLoading ? 1 : 2;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const Slot& x = slots_[static_cast<size_t>(a)];
      const Slot& y = slots_[static_cast<size_t>(b)];
      if (rank(x.state) != rank(y.state)) return rank(x.state) < rank(y.state);
      if (x.since != y.since) return x.since > y.since;
      return a > b;
    });
    for (std::int32_t k = 0; k < current - desired; ++k) {
      remove_pod(order[static_cast<size_t>(k)]);
    }
  }
  AutoscalingPoint p;
  p.t_s = ns_to_sec(now);
  p.metric = metric && sampled > 0 ? sum / sampled : std::numeric_limits<double>::quiet_NaN();
  p.recommended = recommended;
  p.desired = desired;
  p.ready = count(State::kReady);
  p.provisioned = provisioned_.pods();
  timeline_.push_back(p);
}

void Autoscaler::set_state(int slot, State s) {
  Slot& x = slots_[static_cast<size_t>(slot)];
  const TimeNs now = loop_.now();
  const bool was = x.state != State::kAbsent;
  const bool is = s != State::kAbsent;
  if (was != is) {
    provisioned_.step(now, is ? 1 : -1);
    fleet_.step(now, is ? 1 : -1);
  }
  x.state = s;
  x.since = now;
  x.sample.reset();
  ++x.generation;
}

void Autoscaler::add_pod(int slot) {
  ++added_;
  set_state(slot, State::kProvisioning);
  const std::uint64_t gen = slots_[static_cast<size_t>(slot)].generation;
  loop_.schedule_background_in(config_.provision, [this, slot, gen] {
    if (slots_[static_cast<size_t>(slot)].generation != gen) return;
    set_state(slot, State::kLoading);
    const std::uint64_t loading = slots_[static_cast<size_t>(slot)].generation;
    pod_at(slot).restart(config_.load_time, /*keeps_run_alive=*/false);
    loop_.schedule_background_in(config_.load_time, [this, slot, loading] {
      if (slots_[static_cast<size_t>(slot)].generation != loading) return;
      // Ready: the endpoints controller adds it; routers see it after the watch delay.
      set_state(slot, State::kReady);
      gateway_.add_endpoint(slots_[static_cast<size_t>(slot)].pod);
    });
  });
}

void Autoscaler::remove_pod(int slot) {
  ++removed_;
  const Slot& x = slots_[static_cast<size_t>(slot)];
  if (x.state != State::kReady) {
    // Never served: it just goes (a loading process is killed).
    if (x.state == State::kLoading) pod_at(slot).drain(nullptr);
    set_state(slot, State::kAbsent);
    return;
  }
  set_state(slot, State::kDraining);
  const std::uint64_t gen = x.generation;
  gateway_.remove_endpoint(x.pod);
  auto stopped = [this, slot, gen] {
    if (slots_[static_cast<size_t>(slot)].generation == gen) set_state(slot, State::kAbsent);
  };
  loop_.schedule_background_in(config_.prestop,
                               [this, slot, stopped] { pod_at(slot).drain(stopped); });
  // SIGKILL at the end of the grace period, which the preStop hook's time is part of.
  loop_.schedule_background_in(std::max(config_.grace, config_.prestop), [this, slot, gen] {
    const Slot& s = slots_[static_cast<size_t>(slot)];
    if (s.generation == gen && s.state == State::kDraining) {
      pod_at(slot).crash(PodHealth::kRefusing);
    }
  });
}

void PodClock::step(TimeNs t, std::int32_t delta) {
  seconds_ += static_cast<double>(pods_) * ns_to_sec(t - last_);
  last_ = t;
  pods_ += delta;
  peak_ = std::max(peak_, pods_);
}

PodTime PodClock::at_end(TimeNs end) const {
  PodTime p;
  p.pod_seconds = seconds_ + static_cast<double>(pods_) * ns_to_sec(end - last_);
  p.mean_pods = end > 0 ? p.pod_seconds / ns_to_sec(end) : static_cast<double>(pods_);
  p.peak_pods = peak_;
  return p;
}

PoolScaling fixed_pool_scaling(const std::string& pool, std::int32_t pods, TimeNs end) {
  PoolScaling s;
  s.pool = pool;
  s.min_pods = s.max_pods = pods;
  s.pods = PodClock(pods).at_end(end);
  return s;
}

PoolScaling Autoscaler::summary(const std::string& pool, TimeNs end) const {
  PoolScaling s;
  s.pool = pool;
  s.metric = config_.metric_name;
  s.schedule = config_.schedule_text;
  s.target = config_.target;
  s.min_pods = config_.min_pods;
  s.max_pods = config_.max_pods;
  s.pods = provisioned_.at_end(end);
  s.pods.pods_added = added_;
  s.pods.pods_removed = removed_;
  s.pods.scale_ups = ups_;
  s.pods.scale_downs = downs_;
  s.timeline = timeline_;
  return s;
}

}  // namespace fleetsim
