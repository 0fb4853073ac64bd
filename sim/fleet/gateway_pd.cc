// Prefill/decode disaggregation at the gateway, after llm-d: the router picks the decode pod
// first, then asks whether the prompt is worth a prefill pod (the prefix-based decider) and
// picks one with the prefill profile's policy. The decode pod's sidecar sends the prefill leg;
// the gateway carries it there and back, as the network between the two pods.
#include <algorithm>

#include "sim/errors.h"
#include "sim/fleet/gateway.h"

namespace fleetsim {

void Gateway::set_pod_roles(std::vector<PodRole> roles) {
  if (roles.size() != pods_.size()) {
    throw InternalError("gateway: " + std::to_string(roles.size()) + " roles for " +
                        std::to_string(pods_.size()) + " pods");
  }
  pod_roles_ = std::move(roles);
  const bool prefill_pods =
      std::find(pod_roles_.begin(), pod_roles_.end(), PodRole::kPrefill) != pod_roles_.end();
  disaggregated_ = config_.disaggregate && prefill_pods;
  for (const Replica& r : replicas_) {
    if (disaggregated_ && !r.prefill) throw InternalError("gateway: no prefill policy");
  }
}

int Gateway::choose_prefill(const Request& r, int decode_pod, int replica) {
  if (config_.pd_non_cached_tokens > 0) {
    // What the decode pod would compute itself; the decider reads it from its prefix index,
    // here the decode pod's own cache, as KV events tell a precise index.
    const Engine& e = pods_[static_cast<size_t>(decode_pod)]->engine();
    const std::int32_t cached =
        e.cache().lookup(*r.block_hashes, r.prompt_tokens) * e.config().block_size;
    if (r.prompt_tokens < config_.pd_non_cached_tokens ||
        r.prompt_tokens - cached < config_.pd_non_cached_tokens) {
      ++decode_only_;
      return -1;
    }
  }
  RoutingPolicy& policy = *replicas_[static_cast<size_t>(replica)].prefill;
  const std::span<const PodState> pods =
      candidates(replica, policy.reads_engine_state(), Leg::kPrefill);
  // No prefill pod to run the profile on: the decode pod computes the prompt (llm-d keeps the
  // decode profile's result alone).
  const int pod = pods.empty() ? -1 : policy.pick(r, pods, RouteContext{loop_.now()});
  if (pod < 0) {
    ++no_prefill_pod_;
    return -1;
  }
  ++prefill_legs_;
  return pod;
}

void Gateway::on_pod_prefill_leg(const RequestPtr& leg, int /*decode_pod*/) {
  const int pod = leg->prefill_pod;
  auto at = attempts_.find(leg->id);
  const int replica = at != attempts_.end() ? at->second.replica : 0;
  count_in_flight(*leg, pod, replica, +1);
  replicas_[static_cast<size_t>(replica)].prefill->on_dispatched(*leg, pod);
  legs_[leg->id] = LegInFlight{leg, pod, replica};
  observer_.on_prefill_leg(*leg, pod, loop_.now());
  // The sidecar on the decode pod to the prefill pod: one network hop (and back the same).
  loop_.schedule_in(latency_to(pod),
                    [this, pod, leg] { pods_[static_cast<size_t>(pod)]->receive(leg); });
}

void Gateway::on_pod_kv_read(const RequestPtr& r, int /*decode_pod*/) {
  const int pod = r->prefill_pod;
  if (pod < 0) return;
  // NIXL's completion notification, decode pod to prefill pod: one hop.
  loop_.schedule_in(latency_to(pod), [this, pod, id = r->id, attempt = r->attempt] {
    pods_[static_cast<size_t>(pod)]->release_prefill_kv(id, attempt);
  });
}

void Gateway::end_prefill_leg(std::int64_t id, int prefill_pod, std::int32_t attempt) {
  auto it = legs_.find(id);
  if (it == legs_.end() || it->second.pod != prefill_pod || it->second.leg->attempt != attempt) {
    return;
  }
  const Request& leg = *it->second.leg;
  count_in_flight(leg, prefill_pod, it->second.replica, -1);
  replicas_[static_cast<size_t>(it->second.replica)].prefill->on_finished(leg, prefill_pod);
  legs_.erase(it);
}

}  // namespace fleetsim
