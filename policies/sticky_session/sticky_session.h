// Sticky sessions: a session id is bound to a pod at its first request; later requests of the
// session go to the bound pod while it is a candidate. Modelled on the SGLang model gateway's
// manual policy (sgl-project/sglang sgl-model-gateway/src/policies/manual.rs):
//  * branches vacant (first request: a new binding), occupied_hit (bound pod available) and
//    occupied_miss (no bound pod available: pick a new one and remember it too);
//  * a binding keeps up to MAX_CANDIDATE_WORKERS = 2 pods, oldest dropped first, and the first
//    of them that is a candidate serves, so a session returns to its pod when the pod comes back;
//  * bindings idle for ttl_s are forgotten (upstream: max_idle_secs, default 4 h, swept every
//    60 s; here checked at the session's next request, and 0 = never, as this issue specifies);
//  * the pod of a new binding is picked by a configurable policy (upstream: random / min_load /
//    min_group; here any of the registered assignment policies, hrw on the session by default).
// The affinity hit rate is occupied_hit / requests that carry a session id, as a gateway's
// branch counter (record_worker_manual_policy_branch) would report it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "policies/common/request_key.h"
#include "policies/policy.h"

namespace fleetsim {

class StickySessionPolicy : public RoutingPolicy {
 public:
  StickySessionPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  void on_dispatched(const Request& request, int pod) override;
  void on_finished(const Request& request, int pod) override;
  bool reads_engine_state() const override { return assignment_->reads_engine_state(); }

  struct Counters {
    std::int64_t hits = 0;          // occupied_hit: the session was bound and its pod served
    std::int64_t rebinds = 0;       // occupied_miss: bound, but no bound pod was a candidate
    std::int64_t new_bindings = 0;  // vacant: first request of the session (or after expiry)
    std::int64_t expired = 0;       // bindings forgotten after ttl_s without traffic
    std::int64_t no_session = 0;    // requests without a session id (routed by the assignment)
  };
  const Counters& stats() const { return counters_; }
  // hits / (hits + rebinds + new_bindings); 0 before the first request with a session id.
  double affinity_hit_rate() const;
  std::size_t bindings() const { return bindings_.size(); }
  // The pods bound to `session`, oldest first (empty if none).
  std::vector<int> bound_pods(const std::string& session) const;

  std::vector<PolicyCounter> counters() const override;

 private:
  struct Binding {
    std::vector<int> pods;  // at most max_candidates_, oldest first
    TimeNs last_access = 0;
  };

  int assign(const Request& request, std::span<const PodState> candidates, const RouteContext& ctx);

  std::int64_t max_candidates_;
  TimeNs ttl_;  // 0 = bindings never expire
  std::unique_ptr<RoutingPolicy> assignment_;
  std::unordered_map<std::string, Binding> bindings_;
  Counters counters_;
};

// The policies a new binding may be assigned by.
const std::vector<std::string>& sticky_assignment_policies();

}  // namespace fleetsim
