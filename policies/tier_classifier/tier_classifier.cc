#include "policies/tier_classifier/tier_classifier.h"

#include <algorithm>

#include "sim/errors.h"

namespace fleetsim {
namespace {

const char* const kTierNames[2] = {"small", "big"};

TierClassifierPolicy::Rule parse_rule(const std::string& text) {
  if (text == "prompt_tokens") return TierClassifierPolicy::Rule::kPromptTokens;
  if (text == "all_small") return TierClassifierPolicy::Rule::kAllSmall;
  if (text == "all_big") return TierClassifierPolicy::Rule::kAllBig;
  return TierClassifierPolicy::Rule::kHint;
}

// The pool index a tier's parameter names; "" = the first (small) or the last (big) pool.
std::int32_t find_pool(const std::string& param, const std::string& value,
                       const std::vector<std::string>& pools, bool last) {
  if (value.empty()) return last ? static_cast<std::int32_t>(pools.size()) - 1 : 0;
  const auto it = std::find(pools.begin(), pools.end(), value);
  if (it == pools.end()) {
    throw ScenarioError("tier_classifier: " + param + " '" + value +
                        "' is not a pool of the fleet; valid pools: " + join(pools, ", "));
  }
  return static_cast<std::int32_t>(it - pools.begin());
}

}  // namespace

TierClassifierPolicy::TierClassifierPolicy(const Params& params, const PolicyContext& ctx)
    : rule_(parse_rule(params.get_string("rule"))),
      threshold_tokens_(params.get_int("threshold_tokens")),
      default_tier_(params.get_string("default_tier") == "small" ? kSmall : kBig),
      misclassification_rate_(params.get_double("misclassification_rate")),
      latency_fixed_(ms_to_ns(params.get_double("classifier_latency_ms"))),
      latency_ns_per_token_(params.get_double("classifier_ms_per_1k_tokens") * 1e3),
      spill_(params.get_string("on_empty_tier") == "other_tier"),
      pool_names_(ctx.pool_names()),
      pod_pools_(ctx.pod_pools),
      inner_name_(params.get_string("inner_policy")),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/misclassify")) {
  tier_pool_[kSmall] = find_pool("small_pool", params.get_string("small_pool"), pool_names_, false);
  tier_pool_[kBig] = find_pool("big_pool", params.get_string("big_pool"), pool_names_, true);
  const auto& reg = PolicyRegistry::instance();
  if (!reg.contains(inner_name_)) {
    throw ScenarioError("tier_classifier: inner_policy: unknown policy '" + inner_name_ +
                        "'; valid policies: " + join(reg.names(), ", "));
  }
  const auto entry = reg.get(inner_name_, "policy");
  const Params inner_params =
      parse_params_map(params.get_string("inner_params"), entry.spec,
                       "tier_classifier inner_params (" + inner_name_ + ")");
  for (const std::int32_t pool : {tier_pool_[kSmall], tier_pool_[kBig]}) {
    if (inner_.count(pool)) continue;  // both tiers in one pool: one instance
    PolicyContext inner_ctx = ctx;
    inner_ctx.stream_name = ctx.stream_name + "/pool/" + pool_names_[static_cast<size_t>(pool)];
    inner_.emplace(pool, entry.factory(inner_params, inner_ctx));
  }
}

int TierClassifierPolicy::hinted_tier(const Request& request) const {
  if (request.tier.empty()) return -1;
  if (request.tier == kTierNames[kSmall]) return kSmall;
  if (request.tier == kTierNames[kBig]) return kBig;
  if (request.tier == pool_names_[static_cast<size_t>(tier_pool_[kSmall])]) return kSmall;
  if (request.tier == pool_names_[static_cast<size_t>(tier_pool_[kBig])]) return kBig;
  return -1;
}

int TierClassifierPolicy::classify(const Request& request) const {
  switch (rule_) {
    case Rule::kHint: {
      const int h = hinted_tier(request);
      return h >= 0 ? h : default_tier_;
    }
    case Rule::kPromptTokens:
      return request.prompt_tokens >= threshold_tokens_ ? kBig : kSmall;
    case Rule::kAllSmall:
      return kSmall;
    case Rule::kAllBig:
      return kBig;
  }
  return default_tier_;
}

TimeNs TierClassifierPolicy::routing_delay(const Request& request) const {
  return latency_fixed_ +
         static_cast<TimeNs>(latency_ns_per_token_ * static_cast<double>(request.prompt_tokens));
}

int TierClassifierPolicy::pick(const Request& request, std::span<const PodState> candidates,
                               const RouteContext& ctx) {
  int tier = classify(request);
  // One draw per request whatever the rule, so the errors do not depend on the decisions.
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  if (u < misclassification_rate_) {
    tier = 1 - tier;
    ++counters_.misclassified;
  }
  if (const int truth = hinted_tier(request); truth >= 0) {
    ++counters_.known_hint;
    if (tier == truth) ++counters_.correct;
  } else {
    ++counters_.unknown_hint;
  }
  auto in_tier = [&](int t) {
    std::vector<PodState> out;
    for (const PodState& p : candidates) {
      if (p.pool == tier_pool_[t]) out.push_back(p);
    }
    return out;
  };
  std::vector<PodState> pods = in_tier(tier);
  if (pods.empty() && spill_ && tier_pool_[kSmall] != tier_pool_[kBig]) {
    tier = 1 - tier;
    pods = in_tier(tier);
    if (!pods.empty()) ++counters_.spilled;
  }
  if (pods.empty()) {
    ++counters_.refused;
    return -1;
  }
  const int pod = inner_.at(tier_pool_[tier])->pick(request, pods, ctx);
  if (pod >= 0) ++counters_.routed[tier];
  return pod;
}

int TierClassifierPolicy::pool_for(const Request& request) const {
  // The classification without its random error: which tier's pool to wake for a held request.
  if (spill_ && tier_pool_[kSmall] != tier_pool_[kBig]) return -1;
  return tier_pool_[classify(request)];
}

RoutingPolicy* TierClassifierPolicy::inner_for_pod(int pod) const {
  const std::int32_t pool = pod_pools_.empty() ? 0 : pod_pools_.at(static_cast<size_t>(pod));
  const auto it = inner_.find(pool);
  return it == inner_.end() ? nullptr : it->second.get();
}

void TierClassifierPolicy::on_dispatched(const Request& request, int pod) {
  if (RoutingPolicy* p = inner_for_pod(pod)) p->on_dispatched(request, pod);
}

void TierClassifierPolicy::on_first_token(const Request& request, int pod) {
  if (RoutingPolicy* p = inner_for_pod(pod)) p->on_first_token(request, pod);
}

void TierClassifierPolicy::on_finished(const Request& request, int pod) {
  if (RoutingPolicy* p = inner_for_pod(pod)) p->on_finished(request, pod);
}

bool TierClassifierPolicy::wants_kv_events() const {
  return std::any_of(inner_.begin(), inner_.end(),
                     [](const auto& kv) { return kv.second->wants_kv_events(); });
}

bool TierClassifierPolicy::reads_engine_state() const {
  return std::any_of(inner_.begin(), inner_.end(),
                     [](const auto& kv) { return kv.second->reads_engine_state(); });
}

void TierClassifierPolicy::on_kv_events(int pod, std::span<const KvEvent> events) {
  if (RoutingPolicy* p = inner_for_pod(pod)) p->on_kv_events(pod, events);
}

std::vector<PolicyCounter> TierClassifierPolicy::counters() const {
  const auto& c = counters_;
  std::vector<PolicyCounter> out = {
      {"tier_small_routed", static_cast<double>(c.routed[kSmall])},
      {"tier_big_routed", static_cast<double>(c.routed[kBig])},
      {"tier_misclassified", static_cast<double>(c.misclassified)},
      {"tier_known_hint", static_cast<double>(c.known_hint)},
      {"tier_unknown_hint", static_cast<double>(c.unknown_hint)},
      {"tier_classifier_accuracy",
       c.known_hint > 0 ? static_cast<double>(c.correct) / static_cast<double>(c.known_hint) : 0.0,
       true, static_cast<double>(c.known_hint)},
      {"tier_spilled", static_cast<double>(c.spilled)},
      {"tier_refused", static_cast<double>(c.refused)}};
  // The inner policies' own counters, named after their pool.
  for (const auto& [pool, inner] : inner_) {
    for (PolicyCounter ic : inner->counters()) {
      ic.name = pool_names_[static_cast<size_t>(pool)] + "." + ic.name;
      out.push_back(std::move(ic));
    }
  }
  return out;
}

namespace {

ParamSpec tier_classifier_spec() {
  return ParamSpec()
      .text("rule", "hint",
            "how a request is classified: hint (its tier hint, Request.tier: 'small' / 'big' or "
            "a tier's pool name), prompt_tokens (big iff the prompt has >= threshold_tokens), "
            "all_small, all_big",
            {"hint", "prompt_tokens", "all_small", "all_big"})
      .integer("threshold_tokens", 2048,
               "rule prompt_tokens: a request goes to the big tier iff its prompt has at least "
               "this many tokens",
               0)
      .pool_name("small_pool", "", "the small tier's pool (fleet.pools); empty = the first pool")
      .pool_name("big_pool", "", "the big tier's pool (fleet.pools); empty = the last pool")
      .text("default_tier", "big",
            "rule hint: the tier of a request with no hint, or a hint naming neither tier",
            {"small", "big"})
      .real("misclassification_rate", 0,
            "probability that the classifier sends a request to the other tier, drawn per "
            "request from the policy's own stream",
            0, 1)
      .real("classifier_latency_ms", 0,
            "the classifier's own time per request, spent before the pod is picked (on top of "
            "gateway.picker_latency_ms when picker_service is on)",
            0)
      .real("classifier_ms_per_1k_tokens", 0,
            "more classifier time per 1,000 prompt tokens (an encoder reading the prompt)", 0)
      .text("on_empty_tier", "other_tier",
            "when the chosen tier has no healthy pod: other_tier (spill over to the other tier) "
            "or refuse (HTTP 503)",
            {"other_tier", "refuse"})
      .policy_name("inner_policy", "least_outstanding",
                   "the policy that picks the pod inside a tier; one instance per tier, shown "
                   "only that tier's pods")
      .params_of("inner_params", "inner_policy",
                 "the inner policy's parameters, a map (e.g. {tie_break: lowest_index}); "
                 "defaults for the rest");
}

const PolicyRegistrar kTierClassifierRegistrar(
    "tier_classifier",
    "Tier routing: a classifier (tier hint or prompt length, with an error rate and its own "
    "latency) picks the small or the big model pool, then an inner policy picks the pod",
    tier_classifier_spec(),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<TierClassifierPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
