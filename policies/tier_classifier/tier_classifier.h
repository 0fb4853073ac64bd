// Tier routing: a classifier sends each request to a small or a big model tier (a pool of the
// fleet), then a policy of the tier's own picks the pod. The classifier is a rule on the request
// (its tier hint, or its prompt length), wrong with a configurable probability, and takes its own
// time before the request moves on. The rule has the shape of RouteLLM's router
// (lm-sys/RouteLLM routellm/routers/routers.py, Router.route: the strong model iff the router's
// score >= the threshold); the trained score is replaced by a request feature, and the router's
// error rate and inference time are parameters.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace fleetsim {

class TierClassifierPolicy : public RoutingPolicy {
 public:
  enum class Rule { kHint, kPromptTokens, kAllSmall, kAllBig };
  enum Tier { kSmall = 0, kBig = 1 };

  TierClassifierPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  TimeNs routing_delay(const Request& request) const override;
  void on_dispatched(const Request& request, int pod) override;
  void on_first_token(const Request& request, int pod) override;
  void on_finished(const Request& request, int pod) override;
  bool wants_kv_events() const override;
  bool reads_engine_state() const override;
  void on_kv_events(int pod, std::span<const KvEvent> events) override;
  std::vector<PolicyCounter> counters() const override;
  int pool_for(const Request& request) const override;

  // The tier the hint names (the tier's role, "small" / "big", or its pool's name), or -1.
  int hinted_tier(const Request& request) const;
  // The pool index of a tier.
  std::int32_t pool_of_tier(int tier) const { return tier_pool_[static_cast<size_t>(tier)]; }

 private:
  // The inner policy serving `pod`'s pool, or nullptr when the pod is in neither tier.
  RoutingPolicy* inner_for_pod(int pod) const;
  int classify(const Request& request) const;

  Rule rule_;
  std::int64_t threshold_tokens_;
  int default_tier_;
  double misclassification_rate_;
  TimeNs latency_fixed_;
  double latency_ns_per_token_;
  bool spill_;
  std::vector<std::string> pool_names_;
  std::vector<std::int32_t> pod_pools_;
  std::int32_t tier_pool_[2] = {0, 0};
  // One inner policy per pool that serves a tier (one only, when both tiers name one pool).
  std::map<std::int32_t, std::unique_ptr<RoutingPolicy>> inner_;
  std::string inner_name_;
  Rng rng_;

  struct Counters {
    std::int64_t routed[2] = {0, 0};
    std::int64_t misclassified = 0;
    std::int64_t unknown_hint = 0;
    std::int64_t known_hint = 0;
    std::int64_t correct = 0;  // final tier == hinted tier, over known hints
    std::int64_t spilled = 0;
    std::int64_t refused = 0;
  } counters_;
};

}  // namespace fleetsim
