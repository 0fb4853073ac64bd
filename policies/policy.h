// The routing-policy plug-in interface: the gateway asks a policy which pod serves a request.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/kv_cache.h"
#include "models/request.h"
#include "sim/params.h"
#include "sim/registry.h"
#include "sim/rng.h"
#include "sim/time.h"

namespace fleetsim {

// What a router can see of one pod.
struct PodState {
  int index = 0;     // the pod's index in the fleet
  std::string name;  // "pod-0", ...
  bool healthy = true;
  std::int32_t inflight_requests = 0;  // dispatched by this gateway, not yet finished
  std::int64_t inflight_tokens = 0;    // prompt + expected output tokens of those requests
  std::int32_t waiting = 0;            // engine waiting-queue length
  std::int32_t running = 0;            // engine running batch size
  double kv_usage = 0.0;               // fraction of KV blocks in use, 0..1
  std::int32_t pool = 0;               // index of the pod's pool in PolicyContext::pools
};

// Fixed facts a policy may need when it is built.
struct PolicyContext {
  std::vector<std::string> pod_names;
  std::int32_t engine_block_size = 16;
  std::uint64_t seed = 0;   // scenario seed; policies derive their own streams from it
  std::string stream_name;  // unique per arm (and gateway replica), e.g. "arm/epp/policy"
  // The fleet's pools (fleet.pools, in order) and the pool of each pod, by pod index. Empty:
  // one pool, "default", holding every pod (a fleet without fleet.pools).
  std::vector<std::string> pools;
  std::vector<std::int32_t> pod_pools;
  // Each pod's KV capacity in blocks of engine_block_size tokens, by pod index (what vLLM
  // exports as cache_config_info num_gpu_blocks). Empty when unknown.
  std::vector<std::int64_t> pod_kv_blocks;

  std::vector<std::string> pool_names() const {
    return pools.empty() ? std::vector<std::string>{"default"} : pools;
  }
  std::int32_t pool_of(int pod) const {
    return pod_pools.empty() ? 0 : pod_pools.at(static_cast<size_t>(pod));
  }
};

// A counter a policy keeps about its own decisions (hits, fallbacks, rebinds, ...), named after
// the metric of the system it models where there is one. Reported per arm in the result.
struct PolicyCounter {
  std::string name;
  double value = 0;
  // A ratio (a hit rate, an accuracy) is not summed when the counters of several instances are
  // merged (gateway replicas, the tiers of a tier router): it is averaged, weighted by its
  // denominator.
  bool ratio = false;
  double denominator = 0;
};

// Merges the counters of several instances of a policy: counts add up, ratios are averaged
// weighted by their denominators. Names keep the order of their first appearance.
std::vector<PolicyCounter> merge_counters(const std::vector<std::vector<PolicyCounter>>& parts);

struct RouteContext {
  TimeNs now = 0;
};

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  // Chooses one of `candidates` (the pods the gateway believes healthy, never empty) and returns
  // its PodState::index, or -1 when the policy refuses to route the request.
  virtual int pick(const Request& request, std::span<const PodState> candidates,
                   const RouteContext& ctx) = 0;
  // The gateway forwarded `request` to pod `pod`.
  virtual void on_dispatched(const Request& request, int pod) {
    (void)request;
    (void)pod;
  }
  // The request's first token reached the gateway from pod `pod` (its prefill is done).
  virtual void on_first_token(const Request& request, int pod) {
    (void)request;
    (void)pod;
  }
  // The request finished (completed or failed) on pod `pod`.
  virtual void on_finished(const Request& request, int pod) {
    (void)request;
    (void)pod;
  }
  // Time the policy itself takes to decide for `request` (a classifier's inference, say): the
  // gateway waits this long before it calls pick(). 0 by default.
  virtual TimeNs routing_delay(const Request& request) const {
    (void)request;
    return 0;
  }
  // Policies that read the pods' KV-event streams (precise prefix scoring) say so; the gateway
  // then delivers each pod's events, in order, after the stream's delay.
  virtual bool wants_kv_events() const { return false; }
  virtual void on_kv_events(int pod, std::span<const KvEvent> events) {
    (void)pod;
    (void)events;
  }
  // The pool (PolicyContext::pools index) that must serve `request` whatever the pods' state (a
  // classifier's tier that does not spill), or -1 when a pod of any pool may. A gateway holding
  // requests while pools are scaled to zero wakes only that pool.
  virtual int pool_for(const Request& request) const {
    (void)request;
    return -1;
  }
  // Counters about the policy's own decisions, read once after the run.
  virtual std::vector<PolicyCounter> counters() const { return {}; }
  // Whether pick() reads the engines' own state (PodState::waiting, running, kv_usage). Reading
  // it touches every pod's engine for every request, which dominates routing in fleets of
  // thousands of pods; a policy that says false gets those fields as 0. True unless a policy
  // says otherwise (Python policies included); tests/contract_test.cc holds every built-in
  // policy that says false to it.
  virtual bool reads_engine_state() const { return true; }
  // Whether pick() follows the prompt's content (its prefix blocks or leading segment), so that
  // a workload whose prompts share nothing leaves it nothing to work with; the run then warns.
  virtual bool follows_prompt_content() const { return false; }
};

using PolicyRegistry = Registry<RoutingPolicy, const PolicyContext&>;

// Registers a policy at static-initialisation time:
//   FLEETSIM_REGISTER_POLICY(round_robin, "desc", spec_fn, factory_fn)
struct PolicyRegistrar {
  PolicyRegistrar(std::string name, std::string description, ParamSpec spec,
                  PolicyRegistry::Factory factory) {
    PolicyRegistry::instance().add(
        {std::move(name), std::move(description), std::move(spec), std::move(factory)});
  }
};

// Builds a registered policy by name with validated params; throws UnknownNameError.
std::unique_ptr<RoutingPolicy> make_policy(const std::string& name, const Params& params,
                                           const PolicyContext& ctx);

}  // namespace fleetsim
