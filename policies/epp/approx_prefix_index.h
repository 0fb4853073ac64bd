// The EPP's approximate prefix index: per pod, an LRU of the prompt block hashes the EPP has sent
// there. It is written when a request is dispatched and never hears of engine evictions, so it
// can believe a pod holds blocks the pod dropped long ago (and the reverse). Modelled on Gateway
// API Inference Extension pkg/epp/scheduling/framework/plugins/multi/prefix/indexer.go (one
// hashicorp/golang-lru cache per pod plus a hash -> pods map) and plugin.go (hashPrompt,
// matchLongestPrefix).
#pragma once

#include <tsl/robin_map.h>

#include <cstdint>
#include <span>
#include <vector>

#include "models/request.h"

namespace fleetsim {

// Tokens per EPP block: block_size_chars / chars_per_token, rounded, at least 1 (GIE: 64
// characters at about 4 characters a token = 16 tokens, vLLM's default block).
std::int32_t epp_block_tokens(std::int64_t block_size_chars, double chars_per_token);

// The chained hashes of the prompt's first full blocks of `block_tokens` tokens, at most
// `max_blocks` of them (GIE truncates the prompt to maxPrefixBlocksToMatch blocks). Reuses
// request.block_hashes when they were computed at the same block size. Each hash is mixed with the
// model name, as GIE seeds the chain with the model so that two models never share an entry.
std::vector<BlockHash> prompt_prefix_hashes(const Request& request, std::int32_t block_tokens,
                                            std::int32_t max_blocks);

class ApproxPrefixIndex {
 public:
  // `per_pod[i]` > 0 overrides the capacity of pod i (GIE's autoTune: the pod's KV blocks).
  explicit ApproxPrefixIndex(std::int64_t capacity_per_pod, std::vector<std::int64_t> per_pod = {});

  // Records that `pod` was sent `hashes`: each is inserted (or refreshed) in order, so the last
  // block is the most recent and a full LRU evicts a prompt's leading blocks first, as the
  // upstream Add loop does.
  void add(int pod, std::span<const BlockHash> hashes);

  // Matched blocks per pod index (pods never written read 0; the vector may be shorter than the
  // fleet). As GIE's matchLongestPrefix: walk the hashes from the first; stop at the first hash
  // no pod holds; each pod scores one for every hash it holds before that point.
  std::vector<std::int32_t> match(std::span<const BlockHash> hashes) const;
  // Whether any pod holds `hash` (a prompt whose first block no pod holds matches nowhere).
  bool held_anywhere(BlockHash hash) const { return first_holder_.contains(hash); }

  bool contains(int pod, BlockHash hash) const;
  std::int64_t size(int pod) const;
  std::int64_t capacity() const { return capacity_; }
  std::int64_t capacity(int pod) const;
  // Forgets a pod (GIE drops pods that left the pool on a periodic sweep).
  void remove_pod(int pod);

 private:
  static constexpr std::int32_t kNone = -1;

  // One (pod, hash) entry, in two intrusive lists: its pod's LRU and the hash's holders. Entries
  // live in one pool and are linked by index, so an add or an eviction allocates nothing once
  // the pool has grown, and a hash's holders unlink in O(1) (the index is written for every
  // dispatched prompt block; a node per list entry and per map slot made it the run's hottest
  // code).
  struct Entry {
    BlockHash hash = 0;
    std::int32_t pod = 0;
    std::int32_t older = kNone;  // the pod's LRU
    std::int32_t newer = kNone;
    std::int32_t prev_holder = kNone;  // the hash's holders
    std::int32_t next_holder = kNone;
  };
  struct PodLru {
    std::int32_t oldest = kNone;
    std::int32_t newest = kNone;
    std::int64_t size = 0;
    tsl::robin_map<BlockHash, std::int32_t> where;  // hash -> entry
  };
  PodLru& lru_for(int pod);
  std::int32_t new_entry(int pod, BlockHash hash);
  void lru_append(PodLru& lru, std::int32_t e);
  void lru_remove(PodLru& lru, std::int32_t e);
  void link_holder(std::int32_t e);
  void unlink_holder(std::int32_t e);
  // Drops entry `e` from its pod's LRU, map and the hash's holders, and frees it.
  void erase(PodLru& lru, std::int32_t e);

  std::int64_t capacity_;
  std::vector<std::int64_t> per_pod_;
  std::vector<PodLru> pods_;  // by pod index
  std::vector<Entry> entries_;
  std::vector<std::int32_t> free_entries_;
  tsl::robin_map<BlockHash, std::int32_t> first_holder_;  // hash -> an entry of it
};

}  // namespace fleetsim
