#include "policies/sglang_cache_aware/sglang_cache_aware.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/epp/approx_prefix_index.h"

namespace fleetsim {

SglangCacheAwarePolicy::SglangCacheAwarePolicy(const Params& params, const PolicyContext& ctx)
    : cache_threshold_(params.get_double("cache_threshold")),
      balance_abs_(params.get_int("balance_abs_threshold")),
      balance_rel_(params.get_double("balance_rel_threshold")),
      eviction_interval_(sec_to_ns(params.get_double("eviction_interval_s"))),
      max_tree_chars_(params.get_int("max_tree_size")),
      block_size_(ctx.engine_block_size),
      chars_per_block_(static_cast<double>(ctx.engine_block_size) *
                       params.get_double("chars_per_token")),
      trees_(ctx.pod_names.size()),
      next_eviction_(sec_to_ns(params.get_double("eviction_interval_s"))),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/tie")) {}

std::vector<BlockHash> SglangCacheAwarePolicy::prompt_blocks(const Request& request) const {
  return prompt_prefix_hashes(request, block_size_, std::numeric_limits<std::int32_t>::max());
}

SglangCacheAwarePolicy::Tree& SglangCacheAwarePolicy::tree_for(int pod) {
  if (static_cast<size_t>(pod) >= trees_.size()) trees_.resize(static_cast<size_t>(pod) + 1);
  return trees_[static_cast<size_t>(pod)];
}

std::int32_t SglangCacheAwarePolicy::matched_blocks(int pod,
                                                    std::span<const BlockHash> hashes) const {
  if (pod < 0 || static_cast<size_t>(pod) >= trees_.size()) return 0;
  const Tree& t = trees_[static_cast<size_t>(pod)];
  std::int32_t n = 0;
  for (const BlockHash h : hashes) {
    if (t.where.count(h) == 0) break;
    ++n;
  }
  return n;
}

std::int64_t SglangCacheAwarePolicy::tree_chars(int pod) const {
  if (pod < 0 || static_cast<size_t>(pod) >= trees_.size()) return 0;
  const auto blocks = static_cast<double>(trees_[static_cast<size_t>(pod)].order.size());
  return static_cast<std::int64_t>(std::llround(blocks * chars_per_block_));
}

void SglangCacheAwarePolicy::insert(int pod, std::span<const BlockHash> hashes) {
  Tree& t = tree_for(pod);
  // Tail first, so the leading block is the most recent: leaf-first LRU eviction upstream
  // removes a path from its leaf towards the root.
  for (auto it = hashes.rbegin(); it != hashes.rend(); ++it) {
    auto found = t.where.find(*it);
    if (found != t.where.end()) {
      t.order.splice(t.order.end(), t.order, found->second);
    } else {
      t.order.push_back(*it);
      t.where.emplace(*it, std::prev(t.order.end()));
    }
  }
}

void SglangCacheAwarePolicy::evict(std::int64_t max_chars) {
  const auto max_blocks =
      static_cast<size_t>(std::floor(static_cast<double>(max_chars) / chars_per_block_));
  for (Tree& t : trees_) {
    while (t.order.size() > max_blocks) {
      t.where.erase(t.order.front());
      t.order.pop_front();
    }
  }
}

void SglangCacheAwarePolicy::run_due_evictions(TimeNs now) {
  if (eviction_interval_ <= 0) return;  // upstream starts no eviction thread
  while (now >= next_eviction_) {
    evict(max_tree_chars_);
    ++counters_.evictions;
    next_eviction_ += eviction_interval_;
  }
}

int SglangCacheAwarePolicy::draw(const std::vector<int>& pods) {
  if (pods.size() == 1) return pods.front();
  std::uniform_int_distribution<size_t> any(0, pods.size() - 1);
  return pods[any(rng_)];
}

int SglangCacheAwarePolicy::pick(const Request& request, std::span<const PodState> candidates,
                                 const RouteContext& ctx) {
  if (candidates.empty()) return -1;
  run_due_evictions(ctx.now);
  for (const auto& pod : candidates) tree_for(pod.index);  // a new pod is a tenant too
  const std::vector<BlockHash> hashes = prompt_blocks(request);

  std::int32_t max_load = std::numeric_limits<std::int32_t>::min();
  std::int32_t min_load = std::numeric_limits<std::int32_t>::max();
  const PodState* least = nullptr;
  for (const auto& pod : candidates) {
    max_load = std::max(max_load, pod.inflight_requests);
    min_load = std::min(min_load, pod.inflight_requests);
    if (least == nullptr || pod.inflight_requests < least->inflight_requests ||
        (pod.inflight_requests == least->inflight_requests && pod.index < least->index)) {
      least = &pod;
    }
  }
  const bool imbalanced =
      static_cast<std::int64_t>(max_load) - min_load > balance_abs_ &&
      static_cast<double>(max_load) > static_cast<double>(min_load) * balance_rel_;
  if (imbalanced) {
    ++counters_.load_balancing;
    insert(least->index, hashes);
    return least->index;
  }

  // The deepest match over every tenant's tree, and the tenants holding it.
  std::int32_t best = 0;
  std::vector<int> holders;
  for (size_t p = 0; p < trees_.size(); ++p) {
    const std::int32_t m = matched_blocks(static_cast<int>(p), hashes);
    if (m > best) {
      best = m;
      holders.assign(1, static_cast<int>(p));
    } else if (m == best && m > 0) {
      holders.push_back(static_cast<int>(p));
    }
  }
  const double match_rate =
      request.prompt_tokens <= 0
          ? 0.0
          : static_cast<double>(best) * block_size_ / static_cast<double>(request.prompt_tokens);
  int selected = -1;
  if (best > 0) {
    selected = draw(holders);
    // prefix_match refreshes the matched tenant's path.
    insert(selected, std::span<const BlockHash>(hashes.data(), static_cast<size_t>(best)));
  }
  if (best > 0 && match_rate > cache_threshold_) {
    ++counters_.cache_hits;
  } else {
    ++counters_.cache_misses;
    std::int64_t smallest = std::numeric_limits<std::int64_t>::max();
    std::vector<int> small;
    for (size_t p = 0; p < trees_.size(); ++p) {
      const std::int64_t c = tree_chars(static_cast<int>(p));
      if (c < smallest) {
        smallest = c;
        small.assign(1, static_cast<int>(p));
      } else if (c == smallest) {
        small.push_back(static_cast<int>(p));
      }
    }
    selected = draw(small);
  }
  const bool available = std::any_of(candidates.begin(), candidates.end(),
                                     [selected](const PodState& p) { return p.index == selected; });
  if (available) {
    insert(selected, hashes);
    return selected;
  }
  ++counters_.first_healthy;
  int first = candidates.front().index;
  for (const auto& pod : candidates) first = std::min(first, pod.index);
  return first;
}

std::vector<PolicyCounter> SglangCacheAwarePolicy::counters() const {
  return {{"sgl_router_cache_hits_total", static_cast<double>(counters_.cache_hits)},
          {"sgl_router_cache_misses_total", static_cast<double>(counters_.cache_misses)},
          {"sgl_router_load_balancing_events_total", static_cast<double>(counters_.load_balancing)},
          {"sgl_router_first_healthy_fallbacks", static_cast<double>(counters_.first_healthy)},
          {"sgl_router_tree_evictions", static_cast<double>(counters_.evictions)}};
}

namespace {

ParamSpec sglang_spec() {
  return ParamSpec()
      .real("cache_threshold", 0.3,
            "route to the best-matching worker iff matched / prompt length > this, else to the "
            "smallest tree (router_args.py cache_threshold)",
            0.0, 1.0)
      .integer("balance_abs_threshold", 64,
               "imbalanced iff max_load - min_load > this AND max_load > rel x min_load "
               "(router_args.py balance_abs_threshold; loads = in-flight requests)",
               0, 1e9)
      .real("balance_rel_threshold", 1.5,
            "imbalanced iff max_load > this x min_load AND the absolute test holds "
            "(router_args.py balance_rel_threshold)",
            0.0, 1e9)
      .real("eviction_interval_s", 120.0,
            "seconds between tree evictions down to max_tree_size; 0 = never evict "
            "(router_args.py eviction_interval_secs)",
            0.0, 1e9)
      .integer("max_tree_size", 67108864,
               "characters a worker's tree keeps after an eviction (router_args.py "
               "max_tree_size = 2^26)",
               1, 1e15)
      .real("chars_per_token", 4.0,
            "characters per token: the tree holds prompt text, the simulator tokens", 0.01, 1e6);
}

const PolicyRegistrar kSglangRegistrar(
    "sglang_cache_aware",
    "SGLang router cache-aware: approximate prefix tree per worker, shortest queue when "
    "imbalanced (sgl-router src/policies/cache_aware.rs)",
    sglang_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<SglangCacheAwarePolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
