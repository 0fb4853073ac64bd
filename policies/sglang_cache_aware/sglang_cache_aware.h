// The SGLang router's cache-aware policy (sgl-project/sglang sgl-router
// src/policies/cache_aware.rs, with its approximate radix tree src/tree.rs), v0.1.x-v0.2.x:
//  * loads are the router's in-flight request counts (PodState::inflight_requests); the system
//    is imbalanced iff max - min > balance_abs_threshold AND max > balance_rel_threshold x min;
//  * imbalanced: the candidate with the smallest load (the first such in pod order, as Rust's
//    min_by_key), and the prompt is still inserted into that worker's tree;
//  * balanced: the longest prefix any worker's tree holds; if matched / prompt length >
//    cache_threshold, the worker holding it, else the worker with the smallest tree (fewest
//    characters); the prompt is inserted into the chosen worker's tree. If the chosen worker is
//    not a candidate, the first candidate serves and nothing is inserted.
//  * every eviction_interval_s each tree is cut back to max_tree_size characters, least recently
//    used leaves first.
// The tree is modelled per pod as an LRU of the prompt's chained block hashes at the engine's
// block size (a node of characters upstream): a prompt's blocks are touched tail first, so its
// leading block is the most recent and eviction eats an old prompt from its tail, as leaf-first
// eviction does. Sizes are counted in characters: blocks x block size x chars_per_token.
// Ties that upstream leaves to DashMap iteration order (which tenant of the deepest node, which
// of equal smallest trees) are drawn from the policy's stream.
// Defaults are the router's launch defaults, sgl-router py_src/sglang_router/router_args.py
// (cache_threshold 0.3, balance_abs_threshold 64, balance_rel_threshold 1.5,
// eviction_interval_secs 120, max_tree_size 2^26); CacheAwareConfig::default() in
// src/policies/mod.rs (0.5 / 32 / 1.1 / 30 / 10000) applies only to library users.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "policies/policy.h"

namespace fleetsim {

class SglangCacheAwarePolicy : public RoutingPolicy {
 public:
  SglangCacheAwarePolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }

  // The prompt's chained block hashes as the tree sees them.
  std::vector<BlockHash> prompt_blocks(const Request& request) const;
  // Leading blocks of `hashes` that `pod`'s tree holds.
  std::int32_t matched_blocks(int pod, std::span<const BlockHash> hashes) const;
  // Characters in `pod`'s tree (0 for a pod it never saw).
  std::int64_t tree_chars(int pod) const;
  // Inserts (or refreshes) `hashes` in `pod`'s tree; hashes[0] ends most recent.
  void insert(int pod, std::span<const BlockHash> hashes);
  // Cuts every tree back to at most `max_chars` characters, least recent blocks first.
  void evict(std::int64_t max_chars);

  struct Counters {
    std::int64_t cache_hits = 0;      // balanced, match rate > threshold (record_cache_hit)
    std::int64_t cache_misses = 0;    // balanced, routed to the smallest tree
    std::int64_t load_balancing = 0;  // imbalanced (record_load_balancing_event)
    std::int64_t first_healthy = 0;   // chosen worker not a candidate: first candidate
    std::int64_t evictions = 0;       // eviction passes run
  };
  const Counters& stats() const { return counters_; }
  std::vector<PolicyCounter> counters() const override;

 private:
  struct Tree {
    std::list<BlockHash> order;  // front = least recently used
    std::unordered_map<BlockHash, std::list<BlockHash>::iterator> where;
  };
  Tree& tree_for(int pod);
  void run_due_evictions(TimeNs now);
  // A pod among `pods` drawn from the tie stream (pods non-empty).
  int draw(const std::vector<int>& pods);

  double cache_threshold_;
  std::int64_t balance_abs_;
  double balance_rel_;
  TimeNs eviction_interval_;
  std::int64_t max_tree_chars_;
  std::int32_t block_size_;
  double chars_per_block_;
  std::vector<Tree> trees_;  // by pod index; every pod of the fleet is a tenant from the start
  TimeNs next_eviction_;
  Rng rng_;
  Counters counters_;
};

}  // namespace fleetsim
