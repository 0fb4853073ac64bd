// The KV block pool of one vLLM V1 engine with automatic prefix caching (KVCacheManager over
// BlockPool). Free blocks keep their hash until the allocator reuses them, so a finished request's
// prefix stays hittable until memory pressure evicts it, least recently released first.
#pragma once

#include <cstdint>
#include <span>

#include <tsl/robin_map.h>
#include <vector>

#include "models/request.h"

namespace fleetsim {

// Prefix-cache counters as vLLM exports them (vllm:prefix_cache_queries_total,
// vllm:prefix_cache_hits_total, and the number of lookups counted). The scheduler decides when a
// lookup counts (e.g. not for preempted requests), so the cache itself never touches these.
struct PrefixCacheCounters {
  std::int64_t queries = 0;   // prompt tokens looked up
  std::int64_t hits = 0;      // tokens found cached (block-aligned)
  std::int64_t requests = 0;  // lookups counted
};

// What a vLLM pod publishes over its KV-event stream (--kv-events-config): a block hash entered
// the prefix cache (BlockStored), left it (BlockRemoved), or everything went (AllBlocksCleared).
enum class KvEventKind { kStored, kRemoved, kCleared };
struct KvEvent {
  KvEventKind kind = KvEventKind::kStored;
  BlockHash hash = 0;
};

// The blocks of a model's sliding-window layers, as vLLM's hybrid KV cache manager holds them
// (vllm/v1/core/single_type_kv_cache_manager.py, SlidingWindowManager). The layers are split
// into groups of equal size, and a block id is one page in every layer of a group. The cache's
// own chain of hashed blocks is the full-attention groups' (`full_groups` block ids per block
// of the chain); each of `groups` sliding groups holds, beside it, the blocks of its window only:
// a block that leaves the window is freed (still cached, so hittable until evicted), and a
// steady request holds at most `window_blocks` of them.
struct SlidingWindowBlocks {
  std::int32_t groups = 0;  // 0: no sliding-window layers
  std::int32_t window_blocks = 0;
  std::int32_t full_groups = 1;
  // The window in tokens; 0 takes the widest one `window_blocks` allows.
  std::int32_t window_tokens = 0;
  // Blocks of the cache's unit that a request of `chain_blocks` full-attention blocks holds
  // for its sliding layers once its window has slid.
  std::int32_t blocks_for(std::int32_t chain_blocks) const;
};

class KvBlockCache {
 public:
  KvBlockCache(std::int32_t num_blocks, std::int32_t block_size, bool enable_prefix_caching,
               SlidingWindowBlocks sliding = {});

  // Leading blocks of `hashes` found in the cache, stopping at the first miss and capped at
  // floor((num_tokens - 1) / block_size) so the last prompt token is always recomputed. With
  // sliding-window layers a hit also needs their blocks of the window just before its end
  // (ceil((window - 1) / block_size) of them), so it ends where those are cached, as vLLM's
  // hybrid coordinator cuts the full-attention hit to the sliding layers' (or at the leading
  // run of their cached blocks, which needs no window before it).
  std::int32_t lookup(std::span<const BlockHash> hashes, std::int32_t num_tokens) const;

  // Makes `req_id` hold ceil(total_tokens / block_size) blocks. On its first call the request's
  // first `num_cached_blocks` blocks are the cached blocks of hashes[0, num_cached_blocks), which
  // must all be in the cache (as `lookup` just reported). Sliding-window layers get blocks for
  // every position from their window's start on (the whole chunk of a prefill step), after the
  // blocks that left the window by the tokens computed so far are freed, as vLLM's
  // remove_skipped_blocks does first. On the first call, `computed_tokens` (when >= 0) says how
  // many tokens count as computed before the step: a prompt loaded from a prefill pod or from
  // host memory needs sliding blocks for its last window only. Changes nothing and returns
  // false when the free queue cannot supply the blocks.
  bool allocate(std::int64_t req_id, std::span<const BlockHash> hashes,
                std::int32_t num_cached_blocks, std::int32_t total_tokens,
                std::int32_t computed_tokens = -1);
  bool can_allocate(std::int64_t req_id, std::span<const BlockHash> hashes,
                    std::int32_t num_cached_blocks, std::int32_t total_tokens,
                    std::int32_t computed_tokens = -1) const;

  // Registers every block of `req_id` that is full at `num_tokens` tokens under hashes[i] (as far
  // as `hashes` reaches), and its sliding-window blocks of those positions with them. A hash
  // already held by another block leaves this block unhashed. `num_tokens` is also what the
  // request has computed when it next allocates.
  void cache_full_blocks(std::int64_t req_id, std::span<const BlockHash> hashes,
                         std::int32_t num_tokens);

  // Releases every block of `req_id`, last block first, so its tail is evicted before its head.
  // Unknown ids are ignored.
  void free(std::int64_t req_id);

  std::int32_t block_size() const { return block_size_; }
  const SlidingWindowBlocks& sliding() const { return sliding_; }
  std::int32_t num_blocks() const { return num_blocks_; }
  // Blocks with ref count 0, cached or not.
  std::int32_t num_free_blocks() const { return num_free_; }
  double usage() const {
    return 1.0 - static_cast<double>(num_free_) / static_cast<double>(num_blocks_);
  }
  std::int32_t blocks_held(std::int64_t req_id) const;
  // Hashes in the map, i.e. blocks a lookup can hit.
  std::int32_t num_cached_blocks() const {
    return static_cast<std::int32_t>(hash_to_block_.size());
  }
  // Positions whose sliding-window blocks are cached.
  std::int32_t num_cached_window_spans() const {
    return static_cast<std::int32_t>(window_tags_.size());
  }
  std::int64_t evictions() const { return evictions_; }
  bool prefix_caching() const { return prefix_caching_; }

  // Appends a KvEvent for every hash that enters or leaves the cache to `log` (nullptr: off).
  void set_event_log(std::vector<KvEvent>* log) { events_ = log; }

  // Throws InternalError when the pool's bookkeeping is inconsistent. O(num_blocks).
  void check_invariants() const;

 private:
  static constexpr std::int32_t kNone = -1;

  struct Block {
    std::int32_t ref = 0;
    std::int32_t prev = kNone;  // free-queue links; meaningful only while ref == 0
    std::int32_t next = kNone;
    bool hashed = false;  // a chain block in hash_to_block_
    bool tagged = false;  // a sliding-window block in window_tags_
    BlockHash hash = 0;
  };
  // A pod of a big fleet stores tens of thousands of these.
  static_assert(sizeof(Block) <= 24);

  // The sliding layers keep their blocks per span: `full_groups` consecutive positions of the
  // chain (one cache unit's worth of pages), `groups` blocks a span, one per sliding group. A
  // span is cached under the chain hash of its first position; losing any of its blocks loses
  // the span.
  struct RequestBlocks {
    std::vector<std::int32_t> blocks;
    // The sliding-window layers' blocks of spans window_first, window_first + 1, ...
    std::vector<std::int32_t> window;
    std::int32_t window_first = 0;
    std::int32_t window_registered = 0;  // spans before this one were offered to window_tags_
    std::int32_t computed_tokens = 0;
    // Leading blocks already offered to the hash map (registered or left unhashed).
    std::int32_t num_registered = 0;
  };

  std::int32_t blocks_needed(std::int32_t tokens) const;
  std::int32_t spans_for(std::int32_t chain_blocks) const;
  // The first span still in the window once `computed_tokens` tokens are computed.
  std::int32_t first_useful_span(std::int64_t computed_tokens) const;
  // Spans of `req` that left its window by the tokens it has computed.
  std::int32_t spans_to_skip(const RequestBlocks& req) const;
  bool span_cached(std::span<const BlockHash> hashes, std::int32_t position) const;
  std::int32_t sliding_hit(std::span<const BlockHash> hashes, std::int32_t chain_hit) const;
  // The first span a new request holds: the window before its hit of `num_cached_blocks`, or
  // later when more than its hit counts as computed (`computed_tokens`; < 0: the hit only).
  std::int32_t first_window_span(std::int32_t num_cached_blocks,
                                 std::int32_t computed_tokens) const;
  void take_window_span(RequestBlocks& req, std::span<const BlockHash> hashes, std::int32_t span);
  // The free queue's head, held by one request (evicting what it cached).
  std::int32_t take_free_block();
  void release(std::int32_t b);
  void untag_span(BlockHash tag);
  // Free-queue pops `allocate` would need; throws on caller bugs.
  std::int32_t queue_demand(const RequestBlocks* held, std::span<const BlockHash> hashes,
                            std::int32_t num_cached_blocks, std::int32_t total_tokens,
                            std::int32_t computed_tokens) const;
  std::int32_t cached_block(BlockHash hash) const;
  void queue_remove(std::int32_t b);
  void queue_push_back(std::int32_t b);
  std::int32_t pop_free_head();

  // Blocks a request has held at least once, in index order. The pool starts as a free queue of
  // num_blocks_ untouched blocks in index order, and pops take its head, so the untouched blocks
  // blocks_.size() .. num_blocks_ - 1 always make up the head of the queue, ahead of every
  // released block: they are counted, not stored, and a pod's memory follows what it has used,
  // not its capacity (a pod of a big tensor-parallel group has millions of blocks).
  std::vector<Block> blocks_;
  // With sliding-window layers, beside blocks_: a cached window block's next block of its span
  // (kNone at the span's end). Apart, so that a Block stays 24 bytes.
  std::vector<std::int32_t> span_next_;
  std::int32_t num_blocks_ = 0;
  std::vector<KvEvent>* events_ = nullptr;
  std::int32_t block_size_;
  bool prefix_caching_;
  SlidingWindowBlocks sliding_;
  // The queue of released blocks (after the untouched ones).
  std::int32_t head_ = kNone;
  std::int32_t tail_ = kNone;
  std::int32_t num_free_ = 0;  // untouched + released
  std::int64_t evictions_ = 0;
  // Open addressing (Debian's robin-map-dev): every lookup, store and eviction of a block goes
  // through this map, and a node-based map costs a cache miss per node on top of the bucket.
  tsl::robin_map<BlockHash, std::int32_t> hash_to_block_;
  // Cached sliding-window spans: the chain hash of the span's first position -> its first block.
  tsl::robin_map<BlockHash, std::int32_t> window_tags_;
  std::int32_t hit_window_blocks_ = 0;  // ceil((window - 1) / block_size)
  // Looked up for every running request at every step.
  tsl::robin_map<std::int64_t, RequestBlocks> requests_;
  // Block lists of finished requests, kept so new requests reuse their capacity.
  std::vector<std::vector<std::int32_t>> spare_lists_;
};

}  // namespace fleetsim
