#include "policies/aibrix_prefix/aibrix_prefix.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/epp/approx_prefix_index.h"

namespace fleetsim {

AibrixPrefixPolicy::AibrixPrefixPolicy(const Params& params, const PolicyContext& ctx)
    : block_tokens_(epp_block_tokens(params.get_int("block_size_chars"),
                                     params.get_double("chars_per_token"))),
      capacity_(params.get_int("block_number")),
      ttl_(sec_to_ns(params.get_double("eviction_duration_min") * 60.0)),
      std_factor_(params.get_double("standard_deviation_factor")),
      imbalance_factor_(params.get_double("load_imbalance_factor")),
      imbalance_min_gap_(params.get_int("load_imbalance_min_gap")),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/tie")) {}

std::vector<BlockHash> AibrixPrefixPolicy::prompt_blocks(const Request& request) const {
  return prompt_prefix_hashes(request, block_tokens_, std::numeric_limits<std::int32_t>::max());
}

std::unordered_map<int, int> AibrixPrefixPolicy::match(std::span<const BlockHash> hashes,
                                                       const std::vector<int>& allowed,
                                                       TimeNs now) const {
  std::unordered_map<int, int> out;
  std::vector<int> racing = allowed;
  const auto n = static_cast<std::int64_t>(hashes.size());
  for (std::int64_t i = 0; i < n; ++i) {
    auto it = table_.find(hashes[static_cast<size_t>(i)]);
    if (it == table_.end() || expired(it->second, now) || it->second.pods.empty()) break;
    const int percent = static_cast<int>((i + 1) * 100 / n);
    std::vector<int> still;
    for (const int pod : racing) {
      const auto& holders = it->second.pods;
      if (std::find(holders.begin(), holders.end(), pod) != holders.end()) {
        out[pod] = percent;
        still.push_back(pod);
      }
    }
    if (still.empty()) break;
    racing = std::move(still);
  }
  return out;
}

void AibrixPrefixPolicy::add(std::span<const BlockHash> hashes, int pod, TimeNs now) {
  for (const BlockHash h : hashes) {
    auto it = table_.find(h);
    if (it != table_.end()) {
      auto& pods = it->second.pods;
      if (std::find(pods.begin(), pods.end(), pod) == pods.end()) pods.push_back(pod);
      it->second.last_put = now;
      lru_.splice(lru_.begin(), lru_, it->second.where);
      continue;
    }
    lru_.push_front(h);
    table_.emplace(h, Entry{lru_.begin(), {pod}, now});
    if (static_cast<std::int64_t>(table_.size()) > capacity_) {
      table_.erase(lru_.back());
      lru_.pop_back();
    }
  }
}

void AibrixPrefixPolicy::sweep(TimeNs now) {
  // Entries are put at the head with the current time, so the tail holds the oldest puts.
  while (!lru_.empty()) {
    auto it = table_.find(lru_.back());
    if (!expired(it->second, now)) break;
    table_.erase(it);
    lru_.pop_back();
  }
}

int AibrixPrefixPolicy::pick(const Request& request, std::span<const PodState> candidates,
                             const RouteContext& ctx) {
  if (candidates.empty()) return -1;
  sweep(ctx.now);
  const std::vector<BlockHash> hashes = prompt_blocks(request);

  std::int64_t sum = 0;
  std::int32_t lo = std::numeric_limits<std::int32_t>::max();
  std::int32_t hi = 0;
  std::vector<int> allowed;
  for (const auto& pod : candidates) {
    sum += pod.inflight_requests;
    lo = std::min(lo, pod.inflight_requests);
    hi = std::max(hi, pod.inflight_requests);
    allowed.push_back(pod.index);
  }
  const auto n = static_cast<double>(candidates.size());
  const double mean = static_cast<double>(sum) / n;
  if (!(static_cast<double>(hi) <= imbalance_factor_ * (mean + 1.0) ||
        hi - lo < imbalance_min_gap_)) {
    ++counters_.load_gate;
    allowed.clear();
    for (const auto& pod : candidates) {
      if (pod.inflight_requests == lo) allowed.push_back(pod.index);
    }
  }

  int target = -1;
  const std::unordered_map<int, int> matched = match(hashes, allowed, ctx.now);
  if (!matched.empty()) {
    // Sample standard deviation (n - 1) of every candidate's load; NaN for one candidate,
    // which no load passes, as upstream.
    double squares = 0;
    for (const auto& pod : candidates) {
      const double d = static_cast<double>(pod.inflight_requests) - mean;
      squares += d * d;
    }
    const double std_dev = std::sqrt(squares / (n - 1.0));
    std::vector<const PodState*> order;
    for (const auto& pod : candidates) {
      if (matched.count(pod.index) > 0) order.push_back(&pod);
    }
    std::shuffle(order.begin(), order.end(), rng_);
    std::stable_sort(order.begin(), order.end(), [&matched](const PodState* a, const PodState* b) {
      const int ma = matched.at(a->index);
      const int mb = matched.at(b->index);
      if (ma != mb) return ma > mb;
      return a->inflight_requests < b->inflight_requests;
    });
    for (const PodState* pod : order) {
      if (static_cast<double>(pod->inflight_requests) <= mean + std_factor_ * std_dev) {
        target = pod->index;
        break;
      }
    }
    if (target >= 0) ++counters_.prefix_match;
  }
  if (target < 0) {
    ++(matched.empty() ? counters_.least_request_fallback : counters_.prefix_match_skipped);
    target =
        candidates[argmin_candidate(
                       candidates,
                       [](const PodState& p) { return static_cast<double>(p.inflight_requests); },
                       TieBreak::kRandom, rng_)]
            .index;
  }
  if (!hashes.empty()) add(hashes, target, ctx.now);
  return target;
}

std::vector<PolicyCounter> AibrixPrefixPolicy::counters() const {
  return {{"aibrix_prefix_cache_routing_selection_prefix_match",
           static_cast<double>(counters_.prefix_match)},
          {"aibrix_prefix_cache_routing_selection_prefix_match_skipped",
           static_cast<double>(counters_.prefix_match_skipped)},
          {"aibrix_prefix_cache_routing_selection_least_request_fallback",
           static_cast<double>(counters_.least_request_fallback)},
          {"aibrix_prefix_cache_load_gate", static_cast<double>(counters_.load_gate)},
          {"aibrix_prefix_cache_indexer_blocks", static_cast<double>(table_.size())}};
}

namespace {

ParamSpec aibrix_spec() {
  return ParamSpec()
      .integer("block_size_chars", 4,
               "prefix block, in prompt characters (AIBRIX_PREFIX_CACHE_BLOCK_SIZE with the "
               "default character tokenizer, pkg/utils/prefixcacheindexer/hash.go)",
               1, 1e9)
      .real("chars_per_token", 4.0, "characters per token, to turn block_size_chars into tokens",
            0.01, 1e6)
      .integer("block_number", 200000,
               "blocks the indexer keeps in one LRU shared by all pods "
               "(AIBRIX_PREFIX_CACHE_BLOCK_NUMBER)",
               1, 1e12)
      .real("eviction_duration_min", 20.0,
            "a block not added again for this long is forgotten "
            "(AIBRIX_PREFIX_CACHE_EVICTION_DURATION_MINS)",
            0.0, 1e9)
      .real("standard_deviation_factor", 1.0,
            "a matched pod is taken only if its load <= mean + this x std of the loads "
            "(AIBRIX_PREFIX_CACHE_STANDARD_DEVIATION_FACTOR, prefix_cache.go default 1)",
            0.0, 1e9)
      .real("load_imbalance_factor", 2.0,
            "load gate: max load > this x (mean + 1) ... (AIBRIX_PREFIX_CACHE_LOAD_IMBALANCE_"
            "FACTOR)",
            0.0, 1e9)
      .integer("load_imbalance_min_gap", 8,
               "... AND max - min >= this restricts matching to the least-loaded pods "
               "(AIBRIX_PREFIX_CACHE_LOAD_IMBALANCE_MIN_GAP)",
               0, 1e9);
}

const PolicyRegistrar kAibrixRegistrar(
    "aibrix_prefix",
    "AIBrix prefix-cache routing: longest block-prefix match within mean + k x std of load, "
    "else least-request; load gate when skewed (pkg/plugins/gateway/algorithms/prefix_cache.go)",
    aibrix_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<AibrixPrefixPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
