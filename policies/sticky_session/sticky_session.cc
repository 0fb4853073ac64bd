#include "policies/sticky_session/sticky_session.h"

#include <algorithm>

#include "sim/errors.h"

namespace fleetsim {

const std::vector<std::string>& sticky_assignment_policies() {
  static const std::vector<std::string> kNames = {"hrw",         "chwbl",  "consistent_hash",
                                                  "round_robin", "random", "least_outstanding",
                                                  "power_of_two"};
  return kNames;
}

namespace {

std::unique_ptr<RoutingPolicy> make_assignment(const std::string& name, const PolicyContext& ctx) {
  const auto entry = PolicyRegistry::instance().get(name, "policy");
  Params params = entry.spec.defaults();
  // A hashing assignment hashes the session id, so a session's first pod is the pod the same
  // hashing policy would give it without stickiness.
  if (entry.spec.has("key")) params.set("key", std::string("session"));
  PolicyContext inner = ctx;
  inner.stream_name = ctx.stream_name + "/assign";
  return entry.factory(params, inner);
}

bool is_candidate(int pod, std::span<const PodState> candidates) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [pod](const PodState& p) { return p.index == pod; });
}

}  // namespace

StickySessionPolicy::StickySessionPolicy(const Params& params, const PolicyContext& ctx)
    : max_candidates_(params.get_int("max_candidates")),
      ttl_(sec_to_ns(params.get_double("ttl_s"))),
      assignment_(make_assignment(params.get_string("assignment"), ctx)) {}

int StickySessionPolicy::assign(const Request& request, std::span<const PodState> candidates,
                                const RouteContext& ctx) {
  return assignment_->pick(request, candidates, ctx);
}

int StickySessionPolicy::pick(const Request& request, std::span<const PodState> candidates,
                              const RouteContext& ctx) {
  if (candidates.empty()) return -1;
  if (request.session.empty()) {
    ++counters_.no_session;
    return assign(request, candidates, ctx);
  }
  auto it = bindings_.find(request.session);
  if (it != bindings_.end() && ttl_ > 0 && ctx.now - it->second.last_access >= ttl_) {
    ++counters_.expired;
    bindings_.erase(it);
    it = bindings_.end();
  }
  if (it == bindings_.end()) {
    const int pod = assign(request, candidates, ctx);
    if (pod < 0) return pod;
    ++counters_.new_bindings;
    bindings_.emplace(request.session, Binding{{pod}, ctx.now});
    return pod;
  }
  Binding& b = it->second;
  b.last_access = ctx.now;
  for (const int pod : b.pods) {
    if (is_candidate(pod, candidates)) {
      ++counters_.hits;
      return pod;
    }
  }
  const int pod = assign(request, candidates, ctx);
  if (pod < 0) return pod;
  ++counters_.rebinds;
  while (static_cast<std::int64_t>(b.pods.size()) >= max_candidates_) b.pods.erase(b.pods.begin());
  b.pods.push_back(pod);
  return pod;
}

void StickySessionPolicy::on_dispatched(const Request& request, int pod) {
  assignment_->on_dispatched(request, pod);
}

void StickySessionPolicy::on_finished(const Request& request, int pod) {
  assignment_->on_finished(request, pod);
}

double StickySessionPolicy::affinity_hit_rate() const {
  const std::int64_t total = counters_.hits + counters_.rebinds + counters_.new_bindings;
  return total == 0 ? 0.0 : static_cast<double>(counters_.hits) / static_cast<double>(total);
}

std::vector<int> StickySessionPolicy::bound_pods(const std::string& session) const {
  auto it = bindings_.find(session);
  return it == bindings_.end() ? std::vector<int>{} : it->second.pods;
}

std::vector<PolicyCounter> StickySessionPolicy::counters() const {
  return {{"sticky_occupied_hit", static_cast<double>(counters_.hits)},
          {"sticky_occupied_miss", static_cast<double>(counters_.rebinds)},
          {"sticky_vacant", static_cast<double>(counters_.new_bindings)},
          {"sticky_expired", static_cast<double>(counters_.expired)},
          {"sticky_no_routing_id", static_cast<double>(counters_.no_session)},
          {"sticky_bindings", static_cast<double>(bindings_.size())},
          {"sticky_affinity_hit_rate", affinity_hit_rate(), true,
           static_cast<double>(counters_.hits + counters_.rebinds + counters_.new_bindings)}};
}

namespace {

ParamSpec sticky_spec() {
  return ParamSpec()
      .text("assignment", "hrw",
            "policy that picks the pod of a new binding (hashing policies hash the session "
            "id); upstream manual.rs offers random / min_load / min_group",
            sticky_assignment_policies())
      .real("ttl_s", 0.0,
            "a binding without traffic for this long is forgotten; 0 = never (manual.rs "
            "max_idle_secs defaults to 14400)",
            0.0, 1e9)
      .integer("max_candidates", 2,
               "pods remembered per session, oldest dropped first; the first that is a "
               "candidate serves (manual.rs MAX_CANDIDATE_WORKERS = 2)",
               1, 64);
}

const PolicyRegistrar kStickySessionRegistrar(
    "sticky_session",
    "Sticky sessions: a session id is bound to a pod at its first request, rebound when the pod "
    "is gone (SGLang model gateway manual policy, src/policies/manual.rs)",
    sticky_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<StickySessionPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
