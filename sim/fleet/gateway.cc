#include "sim/fleet/gateway.h"

#include <xxhash.h>

#include <algorithm>

#include "sim/errors.h"

namespace fleetsim {

const ParamSpec& gateway_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .real("network_latency_ms", 0.25, "one-way latency between the gateway and a pod", 0)
          .real("request_timeout_s", 60,
                "a request with no first byte by then fails with a timeout (nginx's default "
                "proxy_read_timeout is 60 s); 0 = never",
                0)
          .real("probe_interval_s", 0,
                "health-probe period per pod; 0 = no health checking (every pod believed up)", 0)
          .real("probe_timeout_s", 1, "a probe with no answer by then fails", 0)
          .integer("probe_fall", 3, "consecutive failed probes that mark a pod down (HAProxy fall)",
                   1, 1000)
          .integer("probe_rise", 2,
                   "consecutive good probes that mark a pod up again (HAProxy rise)", 1, 1000)
          .boolean("shed_sheddable", false,
                   "flow control as the Gateway API Inference Extension's EPP runs it: while the "
                   "pool is saturated (no pod with a waiting queue of at most saturation_queue "
                   "and KV usage of at most saturation_kv, as the picker last saw them), a "
                   "request of negative priority (its SLO class's slo.classes.NAME.priority) is "
                   "rejected with HTTP 429; the others are routed as ever")
          .integer("saturation_queue", 5,
                   "a pod with more requests waiting than this has no capacity (the EPP's "
                   "saturation detector, QueueDepthThreshold, default 5)",
                   0, 1000000)
          .real("saturation_kv", 0.8,
                "a pod with a larger share of its KV blocks in use has no capacity (the EPP's "
                "KVCacheUtilThreshold, default 0.8)",
                0, 1)
          .text("tenant_rate_limit", "",
                "a rate limit per tenant at the gateway, as an API gateway's token bucket: "
                "'tenant:requests_per_s, ...' (e.g. 'batch:2, free:0.5'); a request whose "
                "tenant's bucket is empty gets HTTP 429; tenants not listed are not limited; "
                "empty = none")
          .real("tenant_burst_s", 1,
                "each tenant's bucket holds this many seconds of its rate (its burst), full at "
                "the start",
                0.001, 3600)
          .integer("outlier_consecutive_errors", 0,
                   "passive health checking, as Envoy's outlier detection (consecutive_5xx, 5 "
                   "in Envoy): this many failed answers of a pod in a row (5xx, a refused or "
                   "reset connection, a timeout) take it out of routing; 0 = none",
                   0, 1000)
          .real("outlier_base_ejection_s", 30,
                "an ejected pod is out for this times the number of times it was ejected "
                "(Envoy base_ejection_time)",
                0)
          .real("outlier_max_ejection_s", 300, "the longest an ejection lasts (Envoy)", 0)
          .real("outlier_interval_s", 10,
                "how often ejected pods whose time is up return (Envoy interval)", 0.001)
          .real("outlier_max_ejection_percent", 10,
                "at most this share of a pool ejected at once; one pod always may be (Envoy)", 0,
                100)
          .text("probe_phase", "random",
                "first probe of each pod: random in [0, interval) per pod, or aligned at 0",
                {"random", "aligned"})
          .text("replica_health", "own",
                "with several replicas: own = each probes every pod on its own phases and acts "
                "on its own belief (each HAProxy, Envoy or LoxiLB replica runs its own health "
                "checks); shared = all act on one belief",
                {"own", "shared"})
          .boolean("picker_service", false,
                   "the routing policy runs as an Endpoint Picker service the gateway asks per "
                   "request, with its own latency, timeout and failure mode")
          .real("picker_latency_ms", 1.0, "round trip gateway -> picker -> gateway", 0)
          .real("picker_timeout_ms", 200,
                "the gateway gives up on the picker after this (Envoy ext_proc's default "
                "message timeout is 200 ms)",
                0)
          .real("picker_connect_error_ms", 2.0,
                "how long a refused connection to a picker that is down takes to fail", 0)
          .text("picker_failure_mode", "fail_open",
                "when the picker cannot answer: fail_open = route with fallback_policy, "
                "fail_close = HTTP 503",
                {"fail_open", "fail_close"})
          .text("fallback_policy", "round_robin", "the gateway's own rule under fail_open")
          .real("endpoint_watch_delay_ms", 100,
                "a deleted (or newly ready) pod reaches the picker's endpoint list after this", 0)
          .real("hold_for_endpoints_s", 0,
                "a request no pod can take (every pod of its pool gone, as a Deployment scaled "
                "to zero) waits this long for one to join, then gets HTTP 503; KEDA's HTTP "
                "add-on interceptor holds requests so (its readiness timeout); 0 = HTTP 503 at "
                "once",
                0)
          .real("scrape_interval_ms", 0,
                "engine metrics (queue, running, KV use) the router reads are scraped this "
                "often; 0 = live",
                0)
          .real("kv_event_delay_ms", 5,
                "a pod's KV events (block stored / removed) reach a precise-prefix router after "
                "this: publish per engine step, ZMQ hop, indexer",
                0)
          .integer("replicas", 1,
                   "gateway replicas behind an L4 spreader; each has its own routing-policy "
                   "instance (its own prefix index, counters, RNG), its own in-flight counts and "
                   "its own scrape phase",
                   1, 64)
          .text("replica_assignment", "round_robin",
                "how the spreader picks a replica per request: round_robin (IPVS rr, or any "
                "per-request L4/L7 spreader), random (kube-proxy iptables mode with a connection "
                "per request), conversation_hash (session affinity: a hash of the conversation, "
                "else the session id, else the request)",
                {"round_robin", "random", "conversation_hash"})
          .boolean("disaggregate", true,
                   "with pools of role prefill: send each prompt to a prefill pod and decode it "
                   "on a decode pod, which reads the prompt's KV over the network (llm-d's P/D "
                   "disaggregation); false: every pod serves whole requests")
          .integer("pd_non_cached_tokens", 0,
                   "disaggregate only a prompt the decode pod would have to compute at least "
                   "this many tokens of (llm-d's prefix-based-pd-decider nonCachedTokens; 0 = "
                   "always)",
                   0, 1e8)
          .text("prefill_policy", "",
                "the routing policy that picks prefill pods, with its defaults; empty = the "
                "arm's own policy and parameters")
          .text("balance", "request",
                "what the gateway balances: request = each request on its own (an L7 proxy); "
                "connection = a client's keep-alive connection goes on to the pod its first "
                "request was routed to, while that pod is up and the requests go through, as "
                "an L4 balancer (a Kubernetes Service) or a proxy that pins its upstream leg "
                "does; with several replicas the spreader keeps the connection on the replica "
                "it first chose (replica_assignment picks it); a closed-loop client worker, a "
                "stream or an agent session holds one connection, an open-loop or trace "
                "request one of its own",
                {"request", "connection"});
  return kSpec;
}

namespace {

std::string strip(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// "tenant:rate, ..." -> tenant -> requests per second.
std::map<std::string, double> tenant_rates(const std::string& text) {
  std::map<std::string, double> out;
  for (const std::string& item : split_trimmed(text, ',')) {
    const auto colon = item.rfind(':');
    double rate = 0;
    const std::string name = colon == std::string::npos ? "" : strip(item.substr(0, colon));
    if (name.empty() || !parse_finite(strip(item.substr(colon + 1)), rate) || rate <= 0) {
      throw ScenarioError("'" + item + "' in '" + text +
                          "' is not tenant:requests_per_s with a positive rate; expected e.g. "
                          "'batch:2, free:0.5'");
    }
    if (!out.emplace(name, rate).second) {
      throw ScenarioError("tenant '" + name + "' appears twice in '" + text + "'");
    }
  }
  return out;
}

}  // namespace

GatewayConfig gateway_config_from(const Params& p) {
  GatewayConfig c;
  c.network_latency = ms_to_ns(p.get_double("network_latency_ms"));
  c.request_timeout = sec_to_ns(p.get_double("request_timeout_s"));
  c.probe_interval = sec_to_ns(p.get_double("probe_interval_s"));
  c.probe_timeout = sec_to_ns(p.get_double("probe_timeout_s"));
  c.probe_fall = static_cast<int>(p.get_int("probe_fall"));
  c.probe_rise = static_cast<int>(p.get_int("probe_rise"));
  c.probe_random_phase = p.get_string("probe_phase") == "random";
  c.shed_sheddable = p.get_bool("shed_sheddable");
  c.tenant_rate = tenant_rates(p.get_string("tenant_rate_limit"));
  c.tenant_burst_s = p.get_double("tenant_burst_s");
  c.saturation_queue = static_cast<int>(p.get_int("saturation_queue"));
  c.saturation_kv = p.get_double("saturation_kv");
  c.outlier.consecutive_errors = static_cast<int>(p.get_int("outlier_consecutive_errors"));
  c.outlier.base_ejection = sec_to_ns(p.get_double("outlier_base_ejection_s"));
  c.outlier.max_ejection = sec_to_ns(p.get_double("outlier_max_ejection_s"));
  c.outlier.interval = sec_to_ns(p.get_double("outlier_interval_s"));
  c.outlier.max_ejection_percent = p.get_double("outlier_max_ejection_percent");
  c.shared_health = p.get_string("replica_health") == "shared";
  c.picker_service = p.get_bool("picker_service");
  c.picker_latency = ms_to_ns(p.get_double("picker_latency_ms"));
  c.picker_timeout = ms_to_ns(p.get_double("picker_timeout_ms"));
  c.picker_connect_error = ms_to_ns(p.get_double("picker_connect_error_ms"));
  c.picker_failure_mode = p.get_string("picker_failure_mode") == "fail_close"
                              ? PickerFailureMode::kFailClose
                              : PickerFailureMode::kFailOpen;
  c.fallback_policy = p.get_string("fallback_policy");
  c.endpoint_watch_delay = ms_to_ns(p.get_double("endpoint_watch_delay_ms"));
  c.hold_for_endpoints = sec_to_ns(p.get_double("hold_for_endpoints_s"));
  c.scrape_interval = ms_to_ns(p.get_double("scrape_interval_ms"));
  c.kv_event_delay = ms_to_ns(p.get_double("kv_event_delay_ms"));
  c.replicas = static_cast<int>(p.get_int("replicas"));
  const std::string& a = p.get_string("replica_assignment");
  c.replica_assignment = a == "random"              ? ReplicaAssignment::kRandom
                         : a == "conversation_hash" ? ReplicaAssignment::kConversationHash
                                                    : ReplicaAssignment::kRoundRobin;
  c.disaggregate = p.get_bool("disaggregate");
  c.pd_non_cached_tokens = static_cast<std::int32_t>(p.get_int("pd_non_cached_tokens"));
  c.prefill_policy = p.get_string("prefill_policy");
  c.balance_connections = p.get_string("balance") == "connection";
  return c;
}

const char* replica_assignment_name(ReplicaAssignment a) {
  switch (a) {
    case ReplicaAssignment::kRoundRobin:
      return "round_robin";
    case ReplicaAssignment::kRandom:
      return "random";
    case ReplicaAssignment::kConversationHash:
      return "conversation_hash";
  }
  return "?";
}

Gateway::Gateway(EventLoop& loop, std::vector<std::unique_ptr<Pod>>& pods,
                 std::vector<ReplicaPolicies> replicas, FleetObserver& observer,
                 GatewayConfig config, std::uint64_t seed)
    : loop_(loop),
      pods_(pods),
      observer_(observer),
      config_(std::move(config)),
      seed_(seed),
      rng_(make_rng(seed, "gateway/probe-phase")),
      spread_rng_(make_rng(seed, "gateway/spreader")),
      inflight_(pods.size(), 0),
      pod_pools_(pods.size(), 0),
      pod_roles_(pods.size(), PodRole::kBoth),
      endpoints_(pods.size(), true),
      extra_latency_(pods.size(), 0) {
  if (replicas.empty() || static_cast<int>(replicas.size()) != config_.replicas) {
    throw InternalError("gateway: " + std::to_string(replicas.size()) + " replica policies for " +
                        std::to_string(config_.replicas) + " replicas");
  }
  for (auto& rp : replicas) {
    if (!rp.policy || !rp.fallback) throw InternalError("gateway: a replica without a policy");
    Replica r;
    r.policy = std::move(rp.policy);
    r.fallback = std::move(rp.fallback);
    r.prefill = std::move(rp.prefill);
    r.inflight.assign(pods.size(), 0);
    r.inflight_tokens.assign(pods.size(), 0);
    replicas_.push_back(std::move(r));
  }
  health_.resize(config_.shared_health ? 1 : replicas_.size());
  for (Health& h : health_) {
    h.healthy.assign(pods.size(), true);
    h.ok_run.assign(pods.size(), 0);
    h.fail_run.assign(pods.size(), 0);
  }
  for (size_t i = 0; i < pods.size(); ++i) {
    if (pods[i]->index() != static_cast<int>(i)) {
      throw InternalError("gateway: pod " + pods[i]->name() + " at position " + std::to_string(i));
    }
    pod_names_.push_back(pods[i]->name());
  }
}

void Gateway::start() {
  const bool kv_events = std::any_of(replicas_.begin(), replicas_.end(), [](const Replica& r) {
    return r.policy->wants_kv_events() || (r.prefill && r.prefill->wants_kv_events());
  });
  if (kv_events) {
    for (auto& p : pods_) p->publish_kv_events();
  }
  if (config_.probe_interval > 0) {
    // Replica 0 draws its phases as a single gateway does; the others from streams of their own.
    for (int r = 0; r < static_cast<int>(health_.size()); ++r) {
      Rng own = make_rng(seed_, "gateway/replica-" + std::to_string(r) + "/probe-phase");
      Rng& phases = r == 0 ? rng_ : own;
      for (size_t i = 0; i < pods_.size(); ++i) {
        const TimeNs phase = config_.probe_random_phase ? std::uniform_int_distribution<TimeNs>(
                                                              0, config_.probe_interval - 1)(phases)
                                                        : 0;
        loop_.schedule_background_at(loop_.now() + phase,
                                     [this, i, r] { probe(static_cast<int>(i), r); });
      }
    }
  }
  if (config_.outlier.enabled()) {
    outliers_.assign(health_.size(), OutlierDetection(config_.outlier, pod_pools_));
    loop_.schedule_background_in(config_.outlier.interval, [this] { sweep_outliers(); });
  }
  if (config_.scrape_interval > 0) {
    scrape(0);
    // Every other replica scrapes on its own phase, drawn once; it starts with a snapshot.
    for (int r = 1; r < num_replicas(); ++r) {
      Rng phase_rng = make_rng(seed_, "gateway/replica-" + std::to_string(r) + "/scrape-phase");
      const TimeNs phase =
          std::uniform_int_distribution<TimeNs>(0, config_.scrape_interval - 1)(phase_rng);
      take_scrape(r);
      loop_.schedule_background_in(phase, [this, r] { scrape(r); });
    }
  }
}

std::int64_t Gateway::inflight_total() const {
  std::int64_t n = 0;
  for (auto v : inflight_) n += v;
  return n;
}

TimeNs Gateway::latency_to(int pod) const {
  return config_.network_latency + extra_latency_[static_cast<size_t>(pod)];
}

void Gateway::take_scrape(int replica) {
  auto& scraped = replicas_[static_cast<size_t>(replica)].scraped;
  scraped.clear();
  for (const auto& p : pods_) {
    PodState s;
    s.waiting = p->engine().num_waiting();
    s.running = p->engine().num_running();
    s.kv_usage = p->engine().cache().usage();
    scraped.push_back(s);
  }
}

void Gateway::scrape(int replica) {
  take_scrape(replica);
  loop_.schedule_background_in(config_.scrape_interval, [this, replica] { scrape(replica); });
}

std::span<const PodState> Gateway::candidates(int replica, bool engine_state, Leg leg) {
  const Replica& rep = replicas_[static_cast<size_t>(replica)];
  const Health& health = health_of(replica);
  const OutlierDetection* outliers = outliers_of(replica);
  std::vector<PodState>& out = candidates_;
  // Only the gateway's own arrays unless the policy reads the engines: a pod's engine is a
  // memory access of its own, per pod and per request. The buffer keeps last request's entries,
  // so a pod in the same place keeps its name and only its figures are written.
  size_t n = 0;
  for (size_t i = 0; i < pods_.size(); ++i) {
    if (!health.healthy[i] || !endpoints_[i]) continue;
    if (outliers != nullptr && outliers->ejected(static_cast<int>(i))) continue;
    if (disaggregated_ && (pod_roles_[i] == PodRole::kPrefill) != (leg == Leg::kPrefill)) continue;
    if (n == out.size()) out.emplace_back();
    PodState& s = out[n++];
    if (s.index != static_cast<int>(i) || s.name.empty()) {
      s = PodState{};
      s.index = static_cast<int>(i);
      s.name = pod_names_[i];
    }
    s.inflight_requests = rep.inflight[i];
    s.inflight_tokens = rep.inflight_tokens[i];
    s.pool = pod_pools_[i];
    if (engine_state && config_.scrape_interval > 0) {
      s.waiting = rep.scraped[i].waiting;
      s.running = rep.scraped[i].running;
      s.kv_usage = rep.scraped[i].kv_usage;
    } else if (engine_state) {
      const Engine& e = pods_[i]->engine();
      s.waiting = e.num_waiting();
      s.running = e.num_running();
      s.kv_usage = e.cache().usage();
    } else {
      s.waiting = s.running = 0;
      s.kv_usage = 0;
    }
  }
  out.resize(n);
  return out;
}

int Gateway::assign_replica(const Request& r) {
  const int n = num_replicas();
  if (n == 1) return 0;
  switch (config_.replica_assignment) {
    case ReplicaAssignment::kRoundRobin:
      return static_cast<int>(spread_next_++ % n);
    case ReplicaAssignment::kRandom:
      return std::uniform_int_distribution<int>(0, n - 1)(spread_rng_);
    case ReplicaAssignment::kConversationHash: {
      std::uint64_t h = 0;
      if (r.conversation >= 0) {
        const std::int64_t c = r.conversation;
        h = XXH3_64bits_withSeed(&c, sizeof c, 0x636f6e76);  // "conv"
      } else if (!r.session.empty()) {
        h = XXH3_64bits_withSeed(r.session.data(), r.session.size(), 0x73657373);  // "sess"
      } else {
        const std::int64_t id = r.id;
        h = XXH3_64bits_withSeed(&id, sizeof id, 0x72657175);  // "requ"
      }
      return static_cast<int>(h % static_cast<std::uint64_t>(n));
    }
  }
  return 0;
}

bool Gateway::take_token(const Request& r) {
  const auto rate = config_.tenant_rate.find(r.tenant);
  if (rate == config_.tenant_rate.end()) return true;
  const double size = rate->second * config_.tenant_burst_s;
  Bucket& b = buckets_.try_emplace(r.tenant, Bucket{size, loop_.now()}).first->second;
  b.tokens = std::min(size, b.tokens + rate->second * ns_to_sec(loop_.now() - b.at));
  b.at = loop_.now();
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void Gateway::submit(RequestPtr r) {
  observer_.on_arrival(*r, loop_.now());
  if (!take_token(*r)) {
    ++rate_limited_;
    finish(r, -1, Outcome::kShed429);
    return;
  }
  int replica = -1;
  if (config_.balance_connections && r->connection >= 0) {
    // An open connection stays on its replica; a new one is spread and remembered.
    const auto [pin, opened] = pinned_.try_emplace(r->connection);
    if (opened) pin->second.replica = assign_replica(*r);
    replica = pin->second.replica;
  } else {
    replica = assign_replica(*r);
  }
  ++replicas_[static_cast<size_t>(replica)].routed;
  route(std::move(r), replica);
}

int Gateway::pinned_pod(const Request& r, const RoutingPolicy& policy, int replica) {
  const auto it = pinned_.find(r.connection);
  if (it == pinned_.end() || it->second.pod < 0) return -1;
  const int pod = it->second.pod;
  const auto i = static_cast<size_t>(pod);
  const int pool = policy.pool_for(r);
  if (health_of(replica).healthy[i] && endpoints_[i] && (pool < 0 || pool_of(pod) == pool)) {
    return pod;
  }
  it->second.pod = -1;
  return -1;
}

void Gateway::route(RequestPtr r, int replica) {
  RoutingPolicy& policy = *replicas_[static_cast<size_t>(replica)].policy;
  if (config_.balance_connections && r->connection >= 0) {
    if (const int pod = pinned_pod(*r, policy, replica); pod >= 0) {
      ++routed_by_connection_;
      r->prefill_pod = disaggregated_ ? choose_prefill(*r, pod, replica) : -1;
      dispatch(std::move(r), pod, policy, replica);
      return;
    }
  }
  // The policy's own decision time (a classifier, say) comes on top of the picker's round trip.
  const TimeNs think = policy.routing_delay(*r);
  if (!config_.picker_service) {
    if (think <= 0) {
      route_with(policy, std::move(r), replica);
    } else {
      loop_.schedule_in(think, [this, &policy, r = std::move(r), replica]() mutable {
        route_with(policy, std::move(r), replica);
      });
    }
  } else if (!picker_up_) {
    picker_failed(std::move(r), config_.picker_connect_error, replica);
  } else if (config_.picker_latency + think > config_.picker_timeout) {
    picker_failed(std::move(r), config_.picker_timeout, replica);
  } else {
    loop_.schedule_in(config_.picker_latency + think,
                      [this, &policy, r = std::move(r), replica]() mutable {
                        route_with(policy, std::move(r), replica);
                      });
  }
}

std::vector<PolicyCounter> Gateway::counters() const {
  std::vector<PolicyCounter> out = {
      {"routed_by_policy", static_cast<double>(routed_by_policy_)},
      {"routed_by_fallback", static_cast<double>(routed_by_fallback_)},
      {"picker_failures", static_cast<double>(picker_failures_)},
      {"no_healthy_pod", static_cast<double>(no_pod_)}};
  if (config_.hold_for_endpoints > 0) {
    out.push_back({"held_for_a_pod", static_cast<double>(held_total_)});
  }
  if (config_.shed_sheddable) out.push_back({"shed_http_429", static_cast<double>(shed_)});
  if (!config_.tenant_rate.empty()) {
    out.push_back({"rate_limited_http_429", static_cast<double>(rate_limited_)});
  }
  if (config_.balance_connections) {
    out.push_back({"routed_by_connection", static_cast<double>(routed_by_connection_)});
  }
  if (!outliers_.empty()) {
    std::int64_t ejections = 0;
    for (const OutlierDetection& o : outliers_) ejections += o.ejections();
    out.push_back({"outlier_ejections", static_cast<double>(ejections)});
  }
  if (disaggregated_) {
    out.push_back({"prefill_legs", static_cast<double>(prefill_legs_)});
    out.push_back({"decode_only_below_threshold", static_cast<double>(decode_only_)});
    out.push_back({"decode_only_no_prefill_pod", static_cast<double>(no_prefill_pod_)});
  }
  return out;
}

std::vector<PolicyCounter> Gateway::policy_counters() const {
  if (replicas_.size() == 1) return replicas_.front().policy->counters();
  std::vector<std::vector<PolicyCounter>> parts;
  for (const auto& r : replicas_) parts.push_back(r.policy->counters());
  return merge_counters(parts);
}

std::vector<std::int64_t> Gateway::routed_per_replica() const {
  std::vector<std::int64_t> out;
  for (const auto& r : replicas_) out.push_back(r.routed);
  return out;
}

void Gateway::picker_failed(RequestPtr r, TimeNs after, int replica) {
  ++picker_failures_;
  loop_.schedule_in(after, [this, r = std::move(r), replica]() mutable {
    if (config_.picker_failure_mode == PickerFailureMode::kFailClose) {
      finish(r, -1, Outcome::kNoPod503);
    } else {
      route_with(*replicas_[static_cast<size_t>(replica)].fallback, std::move(r), replica);
    }
  });
}

// The saturation detector of the Gateway API Inference Extension (pkg/epp/saturationdetector,
// IsSaturated): the pool is saturated when no pod has good capacity, a waiting queue and a KV
// usage within their thresholds, as the picker's metrics show them; with no pod at all too.
bool Gateway::saturated(int replica) {
  for (const PodState& p : candidates(replica, true)) {
    if (p.waiting <= config_.saturation_queue && p.kv_usage <= config_.saturation_kv) {
      return false;
    }
  }
  return true;
}

void Gateway::route_with(RoutingPolicy& policy, RequestPtr r, int replica) {
  const bool by_fallback = &policy == replicas_[static_cast<size_t>(replica)].fallback.get();
  // The picker's flow control; the gateway's own fallback has none.
  if (config_.shed_sheddable && r->priority < 0 && !by_fallback && saturated(replica)) {
    if (config_.hold_for_endpoints > 0) hold_deadline_.erase(r->id);
    ++shed_;
    finish(r, -1, Outcome::kShed429);
    return;
  }
  const std::span<const PodState> pods = candidates(replica, policy.reads_engine_state());
  const int pod = pods.empty() ? -1 : policy.pick(*r, pods, RouteContext{loop_.now()});
  if (pod < 0) {
    if (config_.hold_for_endpoints > 0) {
      const int pool = policy.pool_for(*r);
      hold(std::move(r), replica, pool);
      return;
    }
    refuse_no_pod(r);
    return;
  }
  if (config_.hold_for_endpoints > 0) hold_deadline_.erase(r->id);
  ++(by_fallback ? routed_by_fallback_ : routed_by_policy_);
  if (pod >= static_cast<int>(pods_.size())) {
    throw InternalError("policy chose pod " + std::to_string(pod) + " of " +
                        std::to_string(pods_.size()));
  }
  // The gateway's own fail-open rule knows nothing of prefill pods: the decode pod computes.
  r->prefill_pod = disaggregated_ && !by_fallback ? choose_prefill(*r, pod, replica) : -1;
  if (config_.balance_connections && r->connection >= 0) {
    pinned_[r->connection] = Pin{replica, pod};
  }
  dispatch(std::move(r), pod, policy, replica);
}

void Gateway::count_in_flight(const Request& r, int pod, int replica, int sign) {
  const auto i = static_cast<size_t>(pod);
  Replica& rep = replicas_[static_cast<size_t>(replica)];
  inflight_[i] += sign;
  rep.inflight[i] += sign;
  rep.inflight_tokens[i] += sign * (std::int64_t{r.prompt_tokens} + r.output_tokens);
}

void Gateway::dispatch(RequestPtr r, int pod, RoutingPolicy& policy, int replica) {
  count_in_flight(*r, pod, replica, +1);
  policy.on_dispatched(*r, pod);
  routed_by_[r->id] = &policy;
  observer_.on_dispatch(*r, pod, loop_.now());
  Attempt& a = attempts_[r->id];
  a.pod = pod;
  a.replica = replica;
  a.number = r->attempt;
  if (config_.request_timeout > 0) {
    a.timeout = loop_.schedule_in(config_.request_timeout,
                                  [this, r, pod] { time_out(r, pod, Outcome::kTimeout); });
  }
  loop_.schedule_in(latency_to(pod), [this, pod, r = std::move(r)]() mutable {
    pods_[static_cast<size_t>(pod)]->receive(std::move(r));
  });
}

void Gateway::on_pod_first_token(const RequestPtr& r, int pod) {
  if (r->prefill_leg_for >= 0) return;  // the prefill pod's one token stays with the decode pod
  loop_.schedule_in(latency_to(pod), [this, r, pod] {
    auto it = attempts_.find(r->id);
    if (it == attempts_.end() || it->second.pod != pod || it->second.number != r->attempt) {
      return;  // that attempt already ended
    }
    // Streaming has begun: the first-byte timeout no longer applies.
    loop_.cancel(it->second.timeout);
    it.value().timeout = EventId{};
    if (auto by = routed_by_.find(r->id); by != routed_by_.end()) {
      by->second->on_first_token(*r, pod);
    }
    observer_.on_first_token(*r, pod, loop_.now());
  });
}

void Gateway::on_pod_finished(const RequestPtr& r, int pod) {
  if (r->prefill_leg_for >= 0) {
    end_prefill_leg(r->id, pod, r->attempt);
    const int decode = r->prefill_leg_for;
    Pod& prefill = *pods_[static_cast<size_t>(pod)];
    const std::int32_t tp = prefill.tensor_parallel_size();
    const bool link_down = prefill.kv_link_down();
    const double slowdown = prefill.kv_link_slowdown();
    loop_.schedule_in(latency_to(pod), [this, r, pod, decode, tp, link_down, slowdown] {
      pods_[static_cast<size_t>(decode)]->prefill_done(r, pod, tp, link_down, slowdown);
    });
    return;
  }
  loop_.schedule_in(latency_to(pod), [this, r, pod] { finish(r, pod, Outcome::kOk); });
}

void Gateway::on_pod_failed(const RequestPtr& r, int pod, Outcome outcome) {
  if (r->prefill_leg_for >= 0) {
    end_prefill_leg(r->id, pod, r->attempt);
    const int decode = r->prefill_leg_for;
    loop_.schedule_in(latency_to(pod), [this, r, decode, outcome] {
      pods_[static_cast<size_t>(decode)]->prefill_failed(r, outcome);
    });
    return;
  }
  loop_.schedule_in(latency_to(pod), [this, r, pod, outcome] { finish(r, pod, outcome); });
}

void Gateway::on_pod_stalled(const RequestPtr& r, int pod) {
  // A stalled prefill leg never answers its decode pod: the request's own timeout ends it.
  if (r->prefill_leg_for >= 0) return;
  auto it = attempts_.find(r->id);
  if (it == attempts_.end() || it->second.pod != pod || config_.request_timeout <= 0) return;
  // The stream stops: the same timeout, now as an idle timeout, ends it mid-stream.
  loop_.cancel(it->second.timeout);
  it.value().timeout = loop_.schedule_in(config_.request_timeout,
                                         [this, r, pod] { time_out(r, pod, Outcome::kMidStream); });
}

void Gateway::time_out(const RequestPtr& r, int pod, Outcome outcome) {
  // The proxy resets the streams it gives up on, and vLLM aborts a request whose client is gone
  // (its API server cancels the request on disconnect): the pod stops computing it, and so does
  // the prefill pod computing its prompt.
  std::vector<int> told{pod};
  if (auto leg = legs_.find(r->id); leg != legs_.end() && leg->second.leg->attempt == r->attempt) {
    told.push_back(leg->second.pod);
  }
  finish(r, pod, outcome);
  for (const int p : told) {
    loop_.schedule_in(latency_to(p), [this, r, p] { pods_[static_cast<size_t>(p)]->abort(*r); });
  }
}

void Gateway::on_pod_kv_events(int pod, std::vector<KvEvent> events) {
  // Every replica's indexer subscribes to the same stream.
  loop_.schedule_background_in(config_.kv_event_delay, [this, pod, ev = std::move(events)] {
    for (auto& r : replicas_) {
      r.policy->on_kv_events(pod, ev);
      if (r.prefill) r.prefill->on_kv_events(pod, ev);
    }
  });
}

void Gateway::finish(const RequestPtr& r, int pod, Outcome outcome) {
  if (pod >= 0) {
    auto it = attempts_.find(r->id);
    if (it == attempts_.end() || it->second.pod != pod || it->second.number != r->attempt) {
      return;  // a stale answer to an attempt that already ended
    }
    loop_.cancel(it->second.timeout);
    count_in_flight(*r, pod, it->second.replica, -1);
    if (OutlierDetection* outliers = outliers_of(it->second.replica)) {
      const bool error = outcome == Outcome::kRefused502 || outcome == Outcome::kTimeout ||
                         outcome == Outcome::kMidStream || outcome == Outcome::kServerError500;
      outliers->on_answer(pod, error, loop_.now());
    }
    attempts_.erase(it);
    auto by = routed_by_.find(r->id);
    if (by != routed_by_.end()) {
      by->second->on_finished(*r, pod);
      routed_by_.erase(by);
    }
    // A prefill leg that never answered (its pod black-holed) ends with its request.
    if (auto leg = legs_.find(r->id);
        leg != legs_.end() && leg->second.leg->attempt == r->attempt) {
      end_prefill_leg(r->id, leg->second.pod, r->attempt);
    }
  }
  // A failed request closes its connection: the client's next one is spread and routed afresh.
  if (outcome != Outcome::kOk && r->connection >= 0) {
    if (auto pin = pinned_.find(r->connection); pin != pinned_.end() && pin->second.pod == pod) {
      pinned_.erase(pin);
    }
  }
  observer_.on_finished(*r, pod, outcome, loop_.now());
  if (completion_) completion_(r, pod, outcome);
}

void Gateway::remove_endpoint(int pod) {
  loop_.schedule_background_in(config_.endpoint_watch_delay,
                               [this, pod] { endpoints_[static_cast<size_t>(pod)] = false; });
}

void Gateway::add_endpoint(int pod) {
  loop_.schedule_background_in(config_.endpoint_watch_delay, [this, pod] {
    endpoints_[static_cast<size_t>(pod)] = true;
    release_held();
  });
}

void Gateway::hold(RequestPtr r, int replica, int pool) {
  const TimeNs now = loop_.now();
  const auto [entry, first] = hold_deadline_.try_emplace(r->id, now + config_.hold_for_endpoints);
  const TimeNs deadline = entry->second;
  if (first) ++held_total_;  // a request held again after a release counts once
  if (deadline <= now) {
    hold_deadline_.erase(r->id);
    refuse_no_pod(r);
    return;
  }
  const std::int64_t key = next_hold_++;
  Held& h = held_[key];
  h.r = r;
  h.replica = replica;
  h.pool = pool;
  h.expiry = loop_.schedule_in(deadline - now, [this, key] {
    const auto it = held_.find(key);
    if (it == held_.end()) return;
    const RequestPtr expired = it->second.r;
    held_.erase(it);
    hold_deadline_.erase(expired->id);
    refuse_no_pod(expired);
  });
}

std::int64_t Gateway::held_for_pool(int pool) const {
  return std::count_if(held_.begin(), held_.end(), [pool](const auto& entry) {
    return entry.second.pool < 0 || entry.second.pool == pool;
  });
}

void Gateway::refuse_no_pod(const RequestPtr& r) {
  ++no_pod_;
  finish(r, -1, Outcome::kNoPod503);
}

void Gateway::release_held() {
  if (held_.empty()) return;
  std::map<std::int64_t, Held> waiting;
  waiting.swap(held_);
  for (auto& [key, h] : waiting) {
    loop_.cancel(h.expiry);
    route(std::move(h.r), h.replica);
  }
}

void Gateway::probe(int pod, int replica) {
  loop_.schedule_background_in(config_.probe_interval,
                               [this, pod, replica] { probe(pod, replica); });
  const Pod& p = *pods_[static_cast<size_t>(pod)];
  const TimeNs rtt = 2 * latency_to(pod);
  bool ok = false;
  TimeNs answer_in = config_.probe_timeout;
  switch (p.health()) {
    case PodHealth::kUp:
      ok = rtt <= config_.probe_timeout;
      answer_in = std::min(rtt, config_.probe_timeout);
      break;
    case PodHealth::kRefusing:
    case PodHealth::kLoading:
    case PodHealth::kDraining:
      answer_in = std::min(rtt, config_.probe_timeout);
      break;
    case PodHealth::kBlackHole:
      break;
  }
  loop_.schedule_background_in(answer_in,
                               [this, pod, ok, replica] { probe_result(pod, ok, replica); });
}

void Gateway::probe_result(int pod, bool ok, int replica) {
  const auto i = static_cast<size_t>(pod);
  Health& h = health_of(replica);
  if (OutlierDetection* outliers = outliers_of(replica); ok && outliers != nullptr) {
    if (outliers->on_probe_ok(pod)) release_held();
  }
  h.ok_run[i] = ok ? h.ok_run[i] + 1 : 0;
  h.fail_run[i] = ok ? 0 : h.fail_run[i] + 1;
  if (h.healthy[i] && h.fail_run[i] >= config_.probe_fall) {
    h.healthy[i] = false;
    observer_.on_health_change(pod, false, loop_.now(), replica);
  } else if (!h.healthy[i] && h.ok_run[i] >= config_.probe_rise) {
    h.healthy[i] = true;
    observer_.on_health_change(pod, true, loop_.now(), replica);
    release_held();
  }
}

void Gateway::sweep_outliers() {
  bool returned = false;
  for (OutlierDetection& o : outliers_) returned |= !o.sweep(loop_.now()).empty();
  if (returned) release_held();
  loop_.schedule_background_in(config_.outlier.interval, [this] { sweep_outliers(); });
}

}  // namespace fleetsim
