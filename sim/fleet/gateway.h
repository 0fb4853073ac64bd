// The gateway: takes a client's request, asks its routing policy (or an Endpoint Picker service)
// for a pod, forwards it, and relays the streamed answer back. It counts in-flight requests per
// pod as a proxy does, health-checks the pods (HAProxy-style fall/rise), times out requests that
// never answer, and keeps the picker's endpoint list as a Kubernetes watch would.
#pragma once

#include <tsl/robin_map.h>

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "policies/policy.h"
#include "sim/event_loop.h"
#include "sim/fleet/observer.h"
#include "sim/fleet/outlier_detection.h"
#include "sim/fleet/pod.h"
#include "sim/fleet/pod_role.h"
#include "sim/params.h"

namespace fleetsim {

enum class PickerFailureMode { kFailOpen, kFailClose };
// How the L4 spreader in front of several gateway replicas chooses one for a request.
enum class ReplicaAssignment { kRoundRobin, kRandom, kConversationHash };

struct GatewayConfig {
  TimeNs network_latency = 0;  // one way, gateway <-> pod
  TimeNs request_timeout = 0;  // a request with no answer by then fails (0 = never)
  // Health probes (0 interval = no health checking: every pod is believed up).
  TimeNs probe_interval = 0;
  TimeNs probe_timeout = 0;
  int probe_fall = 3;
  int probe_rise = 2;
  bool probe_random_phase = true;
  // Passive health checking from the answers (Envoy's outlier detection); off unless set.
  OutlierConfig outlier;
  // With several replicas: each probes every pod on its own phases and keeps its own belief
  // (HAProxy, Envoy and LoxiLB replicas each run their own health checks), or they all share
  // replica 0's (a health source outside the replicas).
  bool shared_health = false;
  // The routing policy runs as a separate picker service (an EPP) asked per request.
  bool picker_service = false;
  TimeNs picker_latency = 0;
  TimeNs picker_timeout = 0;
  TimeNs picker_connect_error = 0;  // how long a refused connection to the picker takes
  PickerFailureMode picker_failure_mode = PickerFailureMode::kFailOpen;
  std::string fallback_policy = "round_robin";
  TimeNs endpoint_watch_delay = 0;  // a deleted or new pod reaches the picker after this
  // A request no pod can take waits this long for one to join (KEDA's HTTP add-on interceptor
  // holds requests while its Deployment is scaled to zero); 0 = HTTP 503 at once.
  TimeNs hold_for_endpoints = 0;
  TimeNs scrape_interval = 0;  // engine metrics the router reads are this stale (0 = live)
  // The EPP's flow control: while no pod has capacity (waiting queue at most saturation_queue,
  // KV usage at most saturation_kv), requests of negative priority are shed with HTTP 429.
  bool shed_sheddable = false;
  int saturation_queue = 5;
  double saturation_kv = 0.8;
  // A token bucket per tenant at the gateway's edge: requests per second and the bucket's size
  // in seconds of that rate; a request that finds its tenant's bucket empty gets HTTP 429.
  std::map<std::string, double> tenant_rate;
  double tenant_burst_s = 1;
  TimeNs kv_event_delay = 0;  // a pod's KV events reach the router after this
  // Gateway replicas behind an L4 spreader, each with its own policy instance, in-flight counts
  // and scrape phase.
  int replicas = 1;
  ReplicaAssignment replica_assignment = ReplicaAssignment::kRoundRobin;
  // Prefill/decode disaggregation, when the fleet has prefill pods (llm-d's pd-profile-handler
  // with its prefix-based decider): send a prompt to a prefill pod unless the decode pod holds
  // all but fewer than `pd_non_cached_tokens` of it (0 = always).
  bool disaggregate = true;
  std::int32_t pd_non_cached_tokens = 0;
  std::string prefill_policy;  // empty: the arm's own policy and parameters
  // Balance connections, not requests: a keep-alive connection's requests go to the pod its
  // first was routed to while that pod is up (an L4 balancer, or a proxy pinning its upstream).
  bool balance_connections = false;
};

const char* replica_assignment_name(ReplicaAssignment a);

// The gateway section of a scenario (scenario-wide, overridable per arm).
const ParamSpec& gateway_spec();
GatewayConfig gateway_config_from(const Params& p);

// The routing policy of one gateway replica, and its fail-open fallback.
struct ReplicaPolicies {
  std::unique_ptr<RoutingPolicy> policy;
  std::unique_ptr<RoutingPolicy> fallback;
  std::unique_ptr<RoutingPolicy> prefill;  // picks prefill pods (null: no disaggregation)
};

class Gateway : public PodListener {
 public:
  using Completion = std::function<void(const RequestPtr&, int pod, Outcome)>;

  // `replicas`: each replica's policy and fallback, config.replicas of them.
  Gateway(EventLoop& loop, std::vector<std::unique_ptr<Pod>>& pods,
          std::vector<ReplicaPolicies> replicas, FleetObserver& observer, GatewayConfig config,
          std::uint64_t seed);
  // The pool of each pod (PodState::pool), by pod index; all 0 unless set.
  void set_pod_pools(std::vector<std::int32_t> pools) { pod_pools_ = std::move(pools); }
  // The role of each pod, by pod index; all kBoth unless set. With prefill pods (and
  // config.disaggregate) a request's prompt goes to one of them and its decode to another pod.
  void set_pod_roles(std::vector<PodRole> roles);
  bool disaggregated() const { return disaggregated_; }

  // Starts the periodic machinery (probes, scrapes). Call once, before the first request.
  void start();
  // A client sends a request (or a retry of one) now.
  void submit(RequestPtr r);
  // Every attempt ends here: ok, or the error a client sees.
  void on_completion(Completion c) { completion_ = std::move(c); }

  // Faults and the control plane.
  void set_picker_up(bool up) { picker_up_ = up; }
  void set_extra_latency(int pod, TimeNs extra) {
    extra_latency_[static_cast<size_t>(pod)] = extra;
  }
  void remove_endpoint(int pod);  // after the watch delay
  void add_endpoint(int pod);     // after the watch delay
  // A pod that is not part of the Service when the run starts (a replica an autoscaler may add).
  void absent_at_start(int pod) { endpoints_[static_cast<size_t>(pod)] = false; }
  // In the endpoint list the routers use (the watch's view).
  bool in_endpoints(int pod) const { return endpoints_[static_cast<size_t>(pod)]; }
  // Requests waiting for a pod to join (GatewayConfig::hold_for_endpoints) that a pod of pool
  // `pool` would serve: held for it, or for any pool.
  std::int64_t held_for_pool(int pool) const;
  // The pool of pod `pod` (set_pod_pools).
  std::int32_t pool_of(int pod) const {
    return pod_pools_.empty() ? 0 : pod_pools_.at(static_cast<size_t>(pod));
  }
  // Prompts the decode pod computed because no prefill pod was there to take them.
  std::int64_t missed_prefills() const { return no_prefill_pod_; }

  void on_pod_first_token(const RequestPtr& r, int pod) override;
  void on_pod_finished(const RequestPtr& r, int pod) override;
  void on_pod_failed(const RequestPtr& r, int pod, Outcome outcome) override;
  void on_pod_stalled(const RequestPtr& r, int pod) override;
  void on_pod_kv_events(int pod, std::vector<KvEvent> events) override;
  void on_pod_prefill_leg(const RequestPtr& leg, int decode_pod) override;
  void on_pod_kv_read(const RequestPtr& r, int decode_pod) override;

  // The first replica's policy.
  const RoutingPolicy& policy() const { return *replicas_.front().policy; }
  int num_replicas() const { return static_cast<int>(replicas_.size()); }
  // The counters of every replica's policy, merged (counts add up, ratios are weighted).
  std::vector<PolicyCounter> policy_counters() const;
  // Requests (attempts) the spreader gave each replica.
  std::vector<std::int64_t> routed_per_replica() const;
  // In flight on `pod`, over every replica.
  std::int32_t inflight(int pod) const { return inflight_[static_cast<size_t>(pod)]; }
  std::int64_t inflight_total() const;
  // How requests were routed: by the policy (or picker), by the fail-open fallback, or refused.
  std::vector<PolicyCounter> counters() const;

 private:
  struct Attempt {
    int pod = -1;
    int replica = 0;
    std::int32_t number = 0;
    EventId timeout;
  };
  // One gateway replica's own view: its policy, the requests it has in flight, its scrapes.
  // The endpoint watch is shared (every replica watches the same API server); health is its
  // own unless GatewayConfig::shared_health.
  struct Replica {
    std::unique_ptr<RoutingPolicy> policy;
    std::unique_ptr<RoutingPolicy> fallback;
    std::unique_ptr<RoutingPolicy> prefill;
    std::vector<std::int32_t> inflight;
    std::vector<std::int64_t> inflight_tokens;
    std::vector<PodState> scraped;  // engine signals as of this replica's last scrape
    std::int64_t routed = 0;        // attempts the spreader gave it
  };
  int assign_replica(const Request& r);
  void route(RequestPtr r, int replica);
  void route_with(RoutingPolicy& policy, RequestPtr r, int replica);
  // balance_connections: the pod `r`'s connection is pinned to, if it may still take `r`; -1
  // otherwise (a leg to a pod that is gone breaks, and is dropped)
  // (routed, up, of the pool `policy` wants); -1 otherwise (and the pin is dropped).
  int pinned_pod(const Request& r, const RoutingPolicy& policy, int replica);
  void picker_failed(RequestPtr r, TimeNs after, int replica);
  void dispatch(RequestPtr r, int pod, RoutingPolicy& policy, int replica);
  // No pod for `r`: hold it until one joins, up to hold_for_endpoints after it was first held,
  // then HTTP 503. release_held() routes every held request again, in the order held.
  // `pool`: the pool it waits for (RoutingPolicy::pool_for), -1 for any.
  void hold(RequestPtr r, int replica, int pool);
  void release_held();
  // HTTP 503: no pod to send `r` to.
  void refuse_no_pod(const RequestPtr& r);
  void finish(const RequestPtr& r, int pod, Outcome outcome);
  // A timeout ends `r` with `outcome` and aborts it on its pod (and its prefill pod).
  void time_out(const RequestPtr& r, int pod, Outcome outcome);
  // Adds (sign +1) or removes (-1) `r` from `pod`'s in-flight counts, overall and `replica`'s.
  void count_in_flight(const Request& r, int pod, int replica, int sign);
  // The routable pods as `replica` sees them, written into candidates_ (one buffer for every
  // request: a fleet of 10,000 pods would otherwise allocate and copy ~1 MB per request).
  // `engine_state`: also each pod's waiting, running and KV usage (scraped or live), which only
  // some policies read (RoutingPolicy::reads_engine_state).
  // `leg`: the pods that may serve it: without disaggregation every pod; with it, the decode
  // side (decode and both) or the prefill pods.
  enum class Leg { kDecode, kPrefill };
  std::span<const PodState> candidates(int replica, bool engine_state, Leg leg = Leg::kDecode);
  bool saturated(int replica);
  // The prefill pod for `r`, about to go to `decode_pod` (-1: the decode pod computes it).
  int choose_prefill(const Request& r, int decode_pod, int replica);
  // A prefill leg's end (from its prefill pod, or with its request): the in-flight counts and
  // the prefill policy hear of it once.
  void end_prefill_leg(std::int64_t id, int prefill_pod, std::int32_t attempt);
  TimeNs latency_to(int pod) const;
  // Health from probes: what a replica (or the one shared view) believes of each pod.
  struct Health {
    std::vector<bool> healthy;
    std::vector<int> ok_run, fail_run;
  };
  Health& health_of(int replica) {
    return health_[config_.shared_health ? 0 : static_cast<size_t>(replica)];
  }
  void probe(int pod, int replica);
  // Each health view's outlier detection (none when it is off), and its interval's sweep.
  OutlierDetection* outliers_of(int replica) {
    if (outliers_.empty()) return nullptr;
    return &outliers_[config_.shared_health ? 0 : static_cast<size_t>(replica)];
  }
  void sweep_outliers();
  void probe_result(int pod, bool ok, int replica);
  void take_scrape(int replica);
  void scrape(int replica);

  EventLoop& loop_;
  std::vector<std::unique_ptr<Pod>>& pods_;
  std::vector<Replica> replicas_;
  FleetObserver& observer_;
  GatewayConfig config_;
  std::uint64_t seed_;
  Rng rng_;
  Rng spread_rng_;
  std::int64_t spread_next_ = 0;
  Completion completion_;
  std::vector<PodState> candidates_;
  std::vector<std::string> pod_names_;
  std::vector<std::int32_t> inflight_;  // over every replica
  std::vector<std::int32_t> pod_pools_;
  std::vector<PodRole> pod_roles_;
  bool disaggregated_ = false;
  // Prefill legs in flight: their prefill pod and replica, by request id.
  struct LegInFlight {
    RequestPtr leg;
    int pod = -1;
    int replica = 0;
  };
  std::map<std::int64_t, LegInFlight> legs_;
  std::int64_t prefill_legs_ = 0, decode_only_ = 0, no_prefill_pod_ = 0;
  std::vector<Health> health_;              // one per replica, or one shared
  std::vector<OutlierDetection> outliers_;  // as health_, when outlier detection is on
  std::vector<bool> endpoints_;             // the picker's endpoint list, from the watch
  std::vector<TimeNs> extra_latency_;
  // By request id; looked up for every first token and end (open addressing: a tree's nodes
  // cost a cache miss each).
  tsl::robin_map<std::int64_t, Attempt> attempts_;
  tsl::robin_map<std::int64_t, RoutingPolicy*> routed_by_;  // which policy to tell on_finished
  bool picker_up_ = true;
  std::int64_t routed_by_policy_ = 0, routed_by_fallback_ = 0, picker_failures_ = 0;
  // balance_connections: where a client connection is held. The L4 spreader keeps it on one
  // replica while it is open; that replica keeps its upstream leg to one pod (-1: none yet, or
  // the leg broke when its pod went away and the next request is routed afresh).
  struct Pin {
    int replica = 0;
    int pod = -1;
  };
  std::map<std::int64_t, Pin> pinned_;  // by connection
  std::int64_t routed_by_connection_ = 0;
  std::int64_t no_pod_ = 0;
  std::int64_t shed_ = 0;
  std::int64_t rate_limited_ = 0;
  struct Bucket {
    double tokens = 0;
    TimeNs at = 0;  // when `tokens` was last brought up to date
  };
  std::map<std::string, Bucket> buckets_;  // by tenant, for those with a rate
  // Takes a token of the request's tenant's bucket; false when it is empty (or its tenant has no
  // rate: true).
  bool take_token(const Request& r);
  struct Held {
    RequestPtr r;
    int replica = 0;
    int pool = -1;  // the pool it waits for, -1: any
    EventId expiry;
  };
  std::map<std::int64_t, Held> held_;             // by the order held
  std::map<std::int64_t, TimeNs> hold_deadline_;  // by request id, from its first hold
  std::int64_t next_hold_ = 0, held_total_ = 0;
};

}  // namespace fleetsim
