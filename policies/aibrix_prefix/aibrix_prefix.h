// AIBrix's prefix-cache router (vllm-project/aibrix pkg/plugins/gateway/algorithms/
// prefix_cache.go, routeOriginal: the local indexer, no KV-event sync), with its indexer
// pkg/utils/prefixcacheindexer/hash.go and pkg/utils/lrustore/lru_store.go:
//  * loads are the gateway's realtime running-request counts (PodState::inflight_requests);
//  * load gate (getTargetPodListOnLoadImbalance): if max > load_imbalance_factor x (mean + 1)
//    AND max - min >= load_imbalance_min_gap, prefix matching is restricted to the pods with
//    the minimum load;
//  * match (seqSearchPrefix): walk the prompt's chained block hashes from the first; a pod
//    stays in the race while it holds every block so far; its match is (i + 1) x 100 / n
//    (integer percent) for the last block i it held;
//  * pick (getTargetPodFromMatchedPodsFromCounts): matched pods shuffled, then stably sorted by
//    match descending and load ascending; the first whose load <= mean + k x std of all
//    candidates' loads (sample standard deviation, util.go) wins;
//  * otherwise least-request over all candidates (ties uniformly at random);
//  * the prompt's hashes are then added for the chosen pod (AddPrefix: each block's entry
//    refreshed, last block most recent) in one global LRU of prefix_cache_block_number entries,
//    each forgotten eviction_duration after it was last added (swept every second upstream,
//    here at each pick).
// Blocks are block_size_chars characters (AIBRIX_PREFIX_CACHE_BLOCK_SIZE = 4 with the default
// character tokenizer), i.e. block_size_chars / chars_per_token tokens, at least one.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

#include "policies/common/pick.h"
#include "policies/policy.h"

namespace fleetsim {

class AibrixPrefixPolicy : public RoutingPolicy {
 public:
  AibrixPrefixPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }

  std::vector<BlockHash> prompt_blocks(const Request& request) const;
  // Pod index -> integer match percent for `hashes` among `allowed` pods (pods with no match
  // are absent), at `now`.
  std::unordered_map<int, int> match(std::span<const BlockHash> hashes,
                                     const std::vector<int>& allowed, TimeNs now) const;
  // AddPrefix: records that `pod` was sent `hashes` at `now`.
  void add(std::span<const BlockHash> hashes, int pod, TimeNs now);
  std::int64_t index_size() const { return static_cast<std::int64_t>(table_.size()); }
  std::int32_t block_tokens() const { return block_tokens_; }

  struct Counters {
    std::int64_t prefix_match = 0;            // selection "prefix_match"
    std::int64_t prefix_match_skipped = 0;    // matched pods all above mean + k x std
    std::int64_t least_request_fallback = 0;  // nothing matched
    std::int64_t load_gate = 0;               // load gate restricted the match
  };
  const Counters& stats() const { return counters_; }
  std::vector<PolicyCounter> counters() const override;

 private:
  struct Entry {
    std::list<BlockHash>::iterator where;
    std::vector<int> pods;
    TimeNs last_put = 0;
  };
  bool expired(const Entry& e, TimeNs now) const { return now - e.last_put > ttl_; }
  void sweep(TimeNs now);

  std::int32_t block_tokens_;
  std::int64_t capacity_;
  TimeNs ttl_;
  double std_factor_;
  double imbalance_factor_;
  std::int64_t imbalance_min_gap_;
  std::list<BlockHash> lru_;  // front = most recently put (upstream's head)
  std::unordered_map<BlockHash, Entry> table_;
  Rng rng_;
  Counters counters_;
};

}  // namespace fleetsim
