#include "models/kv_cache.h"

#include <algorithm>
#include <string>
#include <utility>

#include "sim/errors.h"

namespace fleetsim {

std::int32_t SlidingWindowBlocks::blocks_for(std::int32_t chain_blocks) const {
  if (groups <= 0) return 0;
  const std::int64_t pages = std::int64_t{groups} * std::min(chain_blocks, window_blocks);
  const std::int64_t unit = std::max(full_groups, 1);
  return static_cast<std::int32_t>((pages + unit - 1) / unit);
}

KvBlockCache::KvBlockCache(std::int32_t num_blocks, std::int32_t block_size,
                           bool enable_prefix_caching, SlidingWindowBlocks sliding)
    : block_size_(block_size), prefix_caching_(enable_prefix_caching), sliding_(sliding) {
  if (num_blocks <= 0) {
    throw InternalError("KvBlockCache: num_blocks must be positive, got " +
                        std::to_string(num_blocks));
  }
  if (block_size <= 0) {
    throw InternalError("KvBlockCache: block_size must be positive, got " +
                        std::to_string(block_size));
  }
  if (sliding_.groups > 0) {
    if (sliding_.window_blocks < 1 || sliding_.full_groups < 1 || sliding_.window_tokens < 0) {
      throw InternalError("KvBlockCache: bad sliding-window shape");
    }
    if (sliding_.window_tokens == 0) {
      sliding_.window_tokens = (sliding_.window_blocks - 1) * block_size + 1;
    }
    // vLLM's sliding_window_contiguous_blocks: -1 as the token itself is in its window.
    hit_window_blocks_ = (sliding_.window_tokens - 1 + block_size - 1) / block_size;
  }
  num_blocks_ = num_blocks;
  num_free_ = num_blocks;
}

std::int32_t KvBlockCache::blocks_needed(std::int32_t tokens) const {
  if (tokens <= 0) return 0;
  return static_cast<std::int32_t>((static_cast<std::int64_t>(tokens) + block_size_ - 1) /
                                   block_size_);
}

std::int32_t KvBlockCache::spans_for(std::int32_t chain_blocks) const {
  return (chain_blocks + sliding_.full_groups - 1) / sliding_.full_groups;
}

std::int32_t KvBlockCache::first_useful_span(std::int64_t computed_tokens) const {
  // vLLM's remove_skipped_blocks: tokens before computed - window + 1 are seen by no query.
  const std::int64_t useful =
      std::max<std::int64_t>(0, computed_tokens - sliding_.window_tokens + 1);
  return static_cast<std::int32_t>(useful / block_size_ / sliding_.full_groups);
}

std::int32_t KvBlockCache::first_window_span(std::int32_t num_cached_blocks,
                                             std::int32_t computed_tokens) const {
  const std::int32_t hit =
      std::max(0, num_cached_blocks - hit_window_blocks_) / sliding_.full_groups;
  return computed_tokens < 0 ? hit : std::max(hit, first_useful_span(computed_tokens));
}

std::int32_t KvBlockCache::spans_to_skip(const RequestBlocks& req) const {
  const auto held = static_cast<std::int32_t>(req.window.size()) / sliding_.groups;
  return std::clamp(first_useful_span(req.computed_tokens) - req.window_first, 0, held);
}

std::int32_t KvBlockCache::cached_block(BlockHash hash) const {
  const auto it = hash_to_block_.find(hash);
  return it == hash_to_block_.end() ? kNone : it->second;
}

bool KvBlockCache::span_cached(std::span<const BlockHash> hashes, std::int32_t position) const {
  const std::int32_t first = position / sliding_.full_groups * sliding_.full_groups;
  return window_tags_.contains(hashes[static_cast<size_t>(first)]);
}

// vLLM's SlidingWindowManager.find_longest_cache_hit: from the right, the first run of
// hit_window_blocks_ cached positions ends the hit; without one, the run from position 0 does.
std::int32_t KvBlockCache::sliding_hit(std::span<const BlockHash> hashes,
                                       std::int32_t chain_hit) const {
  if (hit_window_blocks_ <= 0) return chain_hit;
  std::int32_t run = 0;
  for (std::int32_t i = chain_hit - 1; i >= 0; --i) {
    if (!span_cached(hashes, i)) {
      run = 0;
    } else if (++run >= hit_window_blocks_) {
      return i + run;
    }
  }
  return run;
}

std::int32_t KvBlockCache::lookup(std::span<const BlockHash> hashes,
                                  std::int32_t num_tokens) const {
  if (!prefix_caching_ || num_tokens <= 1) return 0;
  const auto cap = std::min<std::int64_t>((num_tokens - 1) / block_size_,
                                          static_cast<std::int64_t>(hashes.size()));
  std::int32_t hit = 0;
  while (hit < cap && hash_to_block_.contains(hashes[static_cast<size_t>(hit)])) ++hit;
  return sliding_.groups > 0 ? sliding_hit(hashes, hit) : hit;
}

std::int32_t KvBlockCache::queue_demand(const RequestBlocks* held,
                                        std::span<const BlockHash> hashes,
                                        std::int32_t num_cached_blocks, std::int32_t total_tokens,
                                        std::int32_t computed_tokens) const {
  const std::int32_t needed = blocks_needed(total_tokens);
  const std::int32_t groups = sliding_.groups;
  if (held != nullptr) {
    std::int32_t demand = std::max(0, needed - static_cast<std::int32_t>(held->blocks.size()));
    if (groups > 0) {
      const std::int32_t skip = spans_to_skip(*held);
      // Blocks leaving the window go back to the queue before the new ones are taken.
      for (std::int32_t i = 0; i < skip * groups; ++i) {
        if (blocks_[static_cast<size_t>(held->window[static_cast<size_t>(i)])].ref == 1) --demand;
      }
      const std::int32_t end =
          held->window_first + static_cast<std::int32_t>(held->window.size()) / groups;
      demand += std::max(0, spans_for(needed) - end) * groups;
    }
    return demand;
  }
  if (num_cached_blocks < 0 || num_cached_blocks > needed ||
      static_cast<size_t>(num_cached_blocks) > hashes.size() ||
      (num_cached_blocks > 0 && !prefix_caching_)) {
    throw InternalError("KvBlockCache::allocate: " + std::to_string(num_cached_blocks) +
                        " cached blocks for " + std::to_string(total_tokens) + " tokens and " +
                        std::to_string(hashes.size()) + " hashes");
  }
  // A cached block nobody holds sits in the free queue: touching it costs a queue entry too.
  std::int32_t demand = needed - num_cached_blocks;
  for (std::int32_t i = 0; i < num_cached_blocks; ++i) {
    const std::int32_t b = cached_block(hashes[static_cast<size_t>(i)]);
    if (b == kNone) {
      throw InternalError("KvBlockCache::allocate: cached block " + std::to_string(i) +
                          " is no longer in the cache");
    }
    if (blocks_[static_cast<size_t>(b)].ref == 0) ++demand;
  }
  if (groups > 0) {
    const std::int32_t first = first_window_span(num_cached_blocks, computed_tokens);
    const std::int32_t hit_end = std::max(first, spans_for(num_cached_blocks));
    for (std::int32_t s = first; s < hit_end; ++s) {
      const auto it = window_tags_.find(hashes[static_cast<size_t>(s) * sliding_.full_groups]);
      if (it == window_tags_.end()) {
        demand += groups;
        continue;
      }
      for (std::int32_t b = it->second; b != kNone; b = span_next_[static_cast<size_t>(b)]) {
        if (blocks_[static_cast<size_t>(b)].ref == 0) ++demand;
      }
    }
    demand += (spans_for(needed) - hit_end) * groups;
  }
  return demand;
}

bool KvBlockCache::can_allocate(std::int64_t req_id, std::span<const BlockHash> hashes,
                                std::int32_t num_cached_blocks, std::int32_t total_tokens,
                                std::int32_t computed_tokens) const {
  const auto it = requests_.find(req_id);
  const RequestBlocks* held = it == requests_.end() ? nullptr : &it->second;
  return queue_demand(held, hashes, num_cached_blocks, total_tokens, computed_tokens) <= num_free_;
}

void KvBlockCache::take_window_span(RequestBlocks& req, std::span<const BlockHash> hashes,
                                    std::int32_t span) {
  const auto it = window_tags_.find(hashes[static_cast<size_t>(span) * sliding_.full_groups]);
  if (it == window_tags_.end()) {
    // Filled by pops once every cached block of the request is held.
    req.window.insert(req.window.end(), static_cast<size_t>(sliding_.groups), kNone);
    return;
  }
  for (std::int32_t b = it->second; b != kNone; b = span_next_[static_cast<size_t>(b)]) {
    if (blocks_[static_cast<size_t>(b)].ref == 0) queue_remove(b);
    ++blocks_[static_cast<size_t>(b)].ref;
    req.window.push_back(b);
  }
}

bool KvBlockCache::allocate(std::int64_t req_id, std::span<const BlockHash> hashes,
                            std::int32_t num_cached_blocks, std::int32_t total_tokens,
                            std::int32_t computed_tokens) {
  auto it = requests_.find(req_id);
  const bool first = it == requests_.end();
  const RequestBlocks* held = first ? nullptr : &it->second;
  if (queue_demand(held, hashes, num_cached_blocks, total_tokens, computed_tokens) > num_free_) {
    return false;
  }
  const std::int32_t needed = blocks_needed(total_tokens);
  const std::int32_t groups = sliding_.groups;
  if (first) {
    it = requests_.try_emplace(req_id).first;
    if (!spare_lists_.empty()) {
      it.value().blocks = std::move(spare_lists_.back());
      spare_lists_.pop_back();
    }
    auto& list = it.value().blocks;
    list.reserve(static_cast<size_t>(needed));
    // Touch before popping, so the pops cannot take (and evict) a block this request reuses.
    for (std::int32_t i = 0; i < num_cached_blocks; ++i) {
      const std::int32_t b = cached_block(hashes[static_cast<size_t>(i)]);
      if (blocks_[static_cast<size_t>(b)].ref == 0) queue_remove(b);
      ++blocks_[static_cast<size_t>(b)].ref;
      list.push_back(b);
    }
    it.value().num_registered = num_cached_blocks;
    it.value().computed_tokens = std::max(num_cached_blocks * block_size_, computed_tokens);
    if (groups > 0) {
      RequestBlocks& req = it.value();
      req.window_first = req.window_registered =
          first_window_span(num_cached_blocks, computed_tokens);
      for (std::int32_t s = req.window_first; s < spans_for(num_cached_blocks); ++s) {
        take_window_span(req, hashes, s);
      }
    }
  } else if (groups > 0) {
    RequestBlocks& req = it.value();
    const std::int32_t skip = spans_to_skip(req);
    // Nearest the window first, as remove_skipped_blocks frees them: evicted first.
    for (std::int32_t i = skip * groups - 1; i >= 0; --i) {
      release(req.window[static_cast<size_t>(i)]);
    }
    req.window.erase(req.window.begin(), req.window.begin() + skip * groups);
    req.window_first += skip;
    req.window_registered = std::max(req.window_registered, req.window_first);
  }
  auto& list = it.value().blocks;
  while (static_cast<std::int32_t>(list.size()) < needed) {
    list.push_back(take_free_block());
  }
  if (groups > 0) {
    RequestBlocks& req = it.value();
    for (auto& b : req.window) {
      if (b == kNone) {
        b = take_free_block();
      }
    }
    const auto window_needed =
        static_cast<size_t>(spans_for(needed) - req.window_first) * static_cast<size_t>(groups);
    while (req.window.size() < window_needed) {
      req.window.push_back(take_free_block());
    }
  }
  return true;
}

void KvBlockCache::cache_full_blocks(std::int64_t req_id, std::span<const BlockHash> hashes,
                                     std::int32_t num_tokens) {
  const auto it = requests_.find(req_id);
  if (it == requests_.end()) return;
  RequestBlocks& req = it.value();
  req.computed_tokens = std::max(req.computed_tokens, num_tokens);
  if (!prefix_caching_) return;
  const std::int32_t full = std::min<std::int32_t>({num_tokens / block_size_,
                                                    static_cast<std::int32_t>(req.blocks.size()),
                                                    static_cast<std::int32_t>(hashes.size())});
  for (std::int32_t i = req.num_registered; i < full; ++i) {
    Block& block = blocks_[static_cast<size_t>(req.blocks[static_cast<size_t>(i)])];
    if (block.hashed) continue;  // a cached block this request reused
    const BlockHash h = hashes[static_cast<size_t>(i)];
    if (hash_to_block_.try_emplace(h, req.blocks[static_cast<size_t>(i)]).second) {
      block.hashed = true;
      block.hash = h;
      if (events_) events_->push_back({KvEventKind::kStored, h});
    }
  }
  req.num_registered = std::max(req.num_registered, full);
  if (sliding_.groups == 0) return;
  const std::int32_t groups = sliding_.groups;
  const std::int32_t end = req.window_first + static_cast<std::int32_t>(req.window.size()) / groups;
  std::int32_t s = std::max(req.window_registered, req.window_first);
  for (; s < end && s * sliding_.full_groups < full; ++s) {
    const auto first = static_cast<size_t>(s - req.window_first) * static_cast<size_t>(groups);
    if (blocks_[static_cast<size_t>(req.window[first])].tagged) continue;  // reused
    const BlockHash tag = hashes[static_cast<size_t>(s) * sliding_.full_groups];
    if (!window_tags_.try_emplace(tag, req.window[first]).second) continue;
    for (std::int32_t g = 0; g < groups; ++g) {
      Block& block = blocks_[static_cast<size_t>(req.window[first + static_cast<size_t>(g)])];
      block.tagged = true;
      block.hash = tag;
      span_next_[static_cast<size_t>(req.window[first + static_cast<size_t>(g)])] =
          g + 1 < groups ? req.window[first + static_cast<size_t>(g) + 1] : kNone;
    }
  }
  req.window_registered = std::max(req.window_registered, s);
}

std::int32_t KvBlockCache::take_free_block() {
  const std::int32_t b = pop_free_head();
  blocks_[static_cast<size_t>(b)].ref = 1;
  return b;
}

void KvBlockCache::release(std::int32_t b) {
  if (--blocks_[static_cast<size_t>(b)].ref == 0) queue_push_back(b);
}

void KvBlockCache::free(std::int64_t req_id) {
  auto it = requests_.find(req_id);
  if (it == requests_.end()) return;
  // The sliding layers' blocks go first (vLLM frees its groups in order, and the first layer of
  // gpt-oss and Gemma is a sliding one), each group's tail first.
  auto& window = it.value().window;
  for (auto b = window.rbegin(); b != window.rend(); ++b) release(*b);
  auto& list = it.value().blocks;
  for (auto b = list.rbegin(); b != list.rend(); ++b) release(*b);
  list.clear();
  spare_lists_.push_back(std::move(list));
  requests_.erase(it);
}

std::int32_t KvBlockCache::blocks_held(std::int64_t req_id) const {
  const auto it = requests_.find(req_id);
  return it == requests_.end()
             ? 0
             : static_cast<std::int32_t>(it->second.blocks.size() + it->second.window.size());
}

void KvBlockCache::queue_remove(std::int32_t b) {
  Block& block = blocks_[static_cast<size_t>(b)];
  if (block.prev == kNone) {
    head_ = block.next;
  } else {
    blocks_[static_cast<size_t>(block.prev)].next = block.next;
  }
  if (block.next == kNone) {
    tail_ = block.prev;
  } else {
    blocks_[static_cast<size_t>(block.next)].prev = block.prev;
  }
  block.prev = block.next = kNone;
  --num_free_;
}

void KvBlockCache::queue_push_back(std::int32_t b) {
  Block& block = blocks_[static_cast<size_t>(b)];
  block.prev = tail_;
  block.next = kNone;
  if (tail_ == kNone) {
    head_ = b;
  } else {
    blocks_[static_cast<size_t>(tail_)].next = b;
  }
  tail_ = b;
  ++num_free_;
}

std::int32_t KvBlockCache::pop_free_head() {
  if (static_cast<std::int32_t>(blocks_.size()) < num_blocks_) {
    // The head of the queue is the next untouched block.
    blocks_.emplace_back();
    if (sliding_.groups > 0) span_next_.push_back(kNone);
    --num_free_;
    return static_cast<std::int32_t>(blocks_.size()) - 1;
  }
  const std::int32_t b = head_;
  if (b == kNone) throw InternalError("KvBlockCache: free queue empty");
  queue_remove(b);
  Block& block = blocks_[static_cast<size_t>(b)];
  if (block.tagged) untag_span(block.hash);
  if (block.hashed) {
    hash_to_block_.erase(block.hash);
    if (events_) events_->push_back({KvEventKind::kRemoved, block.hash});
    block.hashed = false;
    block.hash = 0;
    ++evictions_;
  }
  return b;
}

void KvBlockCache::untag_span(BlockHash tag) {
  const auto it = window_tags_.find(tag);
  std::int32_t b = it->second;
  window_tags_.erase(it);
  while (b != kNone) {
    Block& block = blocks_[static_cast<size_t>(b)];
    const std::int32_t next = span_next_[static_cast<size_t>(b)];
    span_next_[static_cast<size_t>(b)] = kNone;
    b = next;
    block.tagged = false;
    block.hash = 0;
  }
}

void KvBlockCache::check_invariants() const {
  const auto fail = [](const std::string& what) {
    throw InternalError("KvBlockCache invariant broken: " + what);
  };
  std::int64_t free_count = 0;
  std::int64_t ref_sum = 0;
  std::int64_t tagged = 0;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const Block& block = blocks_[b];
    if (block.ref < 0) fail("block " + std::to_string(b) + " has ref " + std::to_string(block.ref));
    if (block.ref == 0) ++free_count;
    ref_sum += block.ref;
    if (block.hashed && block.tagged) fail("block " + std::to_string(b) + " is chain and window");
    if (block.tagged) ++tagged;
    if (block.hashed) {
      const auto it = hash_to_block_.find(block.hash);
      if (it == hash_to_block_.end() || it->second != static_cast<std::int32_t>(b)) {
        fail("block " + std::to_string(b) + " is hashed but not mapped");
      }
    }
  }
  const std::int64_t untouched = num_blocks_ - static_cast<std::int64_t>(blocks_.size());
  if (untouched < 0) fail("more blocks stored than the pool has");
  if (free_count + untouched != num_free_) {
    fail(std::to_string(free_count) + " ref-0 blocks and " + std::to_string(untouched) +
         " untouched but num_free " + std::to_string(num_free_));
  }
  std::int64_t queue_len = 0;
  std::int32_t prev = kNone;
  for (std::int32_t b = head_; b != kNone; b = blocks_[static_cast<size_t>(b)].next) {
    if (b < 0 || static_cast<size_t>(b) >= blocks_.size()) fail("free queue link out of range");
    if (++queue_len > static_cast<std::int64_t>(blocks_.size())) fail("free queue has a cycle");
    const Block& block = blocks_[static_cast<size_t>(b)];
    if (block.ref != 0) fail("block " + std::to_string(b) + " with ref > 0 in the free queue");
    if (block.prev != prev) fail("free queue back link broken at " + std::to_string(b));
    prev = b;
  }
  if (prev != tail_) fail("free queue tail mismatch");
  if (queue_len != free_count) {
    fail("free queue length " + std::to_string(queue_len) + " != ref-0 blocks " +
         std::to_string(free_count));
  }
  for (const auto& [hash, b] : hash_to_block_) {
    if (b < 0 || static_cast<size_t>(b) >= blocks_.size()) fail("hash map entry out of range");
    const Block& block = blocks_[static_cast<size_t>(b)];
    if (!block.hashed || block.hash != hash) {
      fail("hash map points to block " + std::to_string(b) + " whose hash differs");
    }
  }
  for (const auto& [tag, first] : window_tags_) {
    std::int32_t n = 0;
    for (std::int32_t b = first; b != kNone; b = span_next_[static_cast<size_t>(b)]) {
      if (b < 0 || static_cast<size_t>(b) >= blocks_.size() || ++n > sliding_.groups) {
        fail("window span links broken");
      }
      const Block& block = blocks_[static_cast<size_t>(b)];
      if (!block.tagged || block.hash != tag) fail("window span holds a block of another tag");
    }
    if (n != sliding_.groups) fail("window span of " + std::to_string(n) + " blocks");
  }
  if (tagged != std::int64_t{sliding_.groups} * static_cast<std::int64_t>(window_tags_.size())) {
    fail(std::to_string(tagged) + " window blocks tagged for " +
         std::to_string(window_tags_.size()) + " spans");
  }
  std::int64_t held = 0;
  for (const auto& [id, req] : requests_) {
    if (sliding_.groups > 0 && req.window.size() % static_cast<size_t>(sliding_.groups) != 0) {
      fail("request " + std::to_string(id) + " holds part of a window span");
    }
    held += static_cast<std::int64_t>(req.blocks.size() + req.window.size());
    for (const auto* list : {&req.blocks, &req.window}) {
      for (const std::int32_t b : *list) {
        if (b < 0 || static_cast<size_t>(b) >= blocks_.size() ||
            blocks_[static_cast<size_t>(b)].ref <= 0) {
          fail("request " + std::to_string(id) + " holds a free or invalid block");
        }
      }
    }
  }
  if (held != ref_sum) {
    fail("requests hold " + std::to_string(held) + " blocks but refs sum to " +
         std::to_string(ref_sum));
  }
}

}  // namespace fleetsim
