#include "policies/epp/approx_prefix_index.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "models/block_hash.h"
#include "sim/errors.h"

namespace fleetsim {

std::int32_t epp_block_tokens(std::int64_t block_size_chars, double chars_per_token) {
  if (chars_per_token <= 0) throw InternalError("chars_per_token must be positive");
  const double tokens = std::round(static_cast<double>(block_size_chars) / chars_per_token);
  return std::max<std::int32_t>(1, static_cast<std::int32_t>(tokens));
}

std::vector<BlockHash> prompt_prefix_hashes(const Request& request, std::int32_t block_tokens,
                                            std::int32_t max_blocks) {
  std::vector<BlockHash> chain;
  if (request.block_hashes && request.hash_block_size == block_tokens) {
    // The request's hashes cover prompt + output; its first prompt_tokens / B are the prompt's.
    const auto prompt_blocks = static_cast<size_t>(request.prompt_tokens / block_tokens);
    const size_t n = std::min(prompt_blocks, request.block_hashes->size());
    chain.assign(request.block_hashes->begin(),
                 request.block_hashes->begin() + static_cast<std::ptrdiff_t>(n));
  } else {
    chain = hash_blocks(request.prompt, block_tokens);
  }
  if (chain.size() > static_cast<size_t>(max_blocks)) chain.resize(static_cast<size_t>(max_blocks));
  const std::uint64_t model = XXH3_64bits(request.model.data(), request.model.size());
  for (auto& h : chain) h = XXH3_64bits_withSeed(&h, sizeof h, model);
  return chain;
}

ApproxPrefixIndex::ApproxPrefixIndex(std::int64_t capacity_per_pod,
                                     std::vector<std::int64_t> per_pod)
    : capacity_(capacity_per_pod), per_pod_(std::move(per_pod)) {
  if (capacity_ <= 0) throw InternalError("prefix index capacity must be positive");
}

std::int64_t ApproxPrefixIndex::capacity(int pod) const {
  const auto i = static_cast<size_t>(pod);
  return i < per_pod_.size() && per_pod_[i] > 0 ? per_pod_[i] : capacity_;
}

ApproxPrefixIndex::PodLru& ApproxPrefixIndex::lru_for(int pod) {
  if (pod < 0) throw InternalError("negative pod index");
  if (static_cast<size_t>(pod) >= pods_.size()) pods_.resize(static_cast<size_t>(pod) + 1);
  return pods_[static_cast<size_t>(pod)];
}

std::int32_t ApproxPrefixIndex::new_entry(int pod, BlockHash hash) {
  std::int32_t e = kNone;
  if (free_entries_.empty()) {
    e = static_cast<std::int32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    e = free_entries_.back();
    free_entries_.pop_back();
  }
  entries_[static_cast<size_t>(e)] = Entry{.hash = hash, .pod = pod};
  return e;
}

void ApproxPrefixIndex::lru_append(PodLru& lru, std::int32_t e) {
  Entry& entry = entries_[static_cast<size_t>(e)];
  entry.older = lru.newest;
  entry.newer = kNone;
  if (lru.newest != kNone) {
    entries_[static_cast<size_t>(lru.newest)].newer = e;
  } else {
    lru.oldest = e;
  }
  lru.newest = e;
}

void ApproxPrefixIndex::lru_remove(PodLru& lru, std::int32_t e) {
  const Entry& entry = entries_[static_cast<size_t>(e)];
  if (entry.older != kNone) {
    entries_[static_cast<size_t>(entry.older)].newer = entry.newer;
  } else {
    lru.oldest = entry.newer;
  }
  if (entry.newer != kNone) {
    entries_[static_cast<size_t>(entry.newer)].older = entry.older;
  } else {
    lru.newest = entry.older;
  }
}

void ApproxPrefixIndex::link_holder(std::int32_t e) {
  auto [it, inserted] = first_holder_.try_emplace(entries_[static_cast<size_t>(e)].hash, e);
  if (inserted) return;
  // After the first holder: the holders' order does not matter, only their count per pod.
  Entry& first = entries_[static_cast<size_t>(it->second)];
  Entry& entry = entries_[static_cast<size_t>(e)];
  entry.prev_holder = it->second;
  entry.next_holder = first.next_holder;
  if (first.next_holder != kNone) entries_[static_cast<size_t>(first.next_holder)].prev_holder = e;
  first.next_holder = e;
}

void ApproxPrefixIndex::unlink_holder(std::int32_t e) {
  const Entry& entry = entries_[static_cast<size_t>(e)];
  if (entry.next_holder != kNone) {
    entries_[static_cast<size_t>(entry.next_holder)].prev_holder = entry.prev_holder;
  }
  if (entry.prev_holder != kNone) {
    entries_[static_cast<size_t>(entry.prev_holder)].next_holder = entry.next_holder;
  } else if (entry.next_holder != kNone) {
    first_holder_[entry.hash] = entry.next_holder;
  } else {
    first_holder_.erase(entry.hash);
  }
}

void ApproxPrefixIndex::erase(PodLru& lru, std::int32_t e) {
  lru_remove(lru, e);
  lru.where.erase(entries_[static_cast<size_t>(e)].hash);
  unlink_holder(e);
  --lru.size;
  free_entries_.push_back(e);
}

void ApproxPrefixIndex::add(int pod, std::span<const BlockHash> hashes) {
  PodLru& lru = lru_for(pod);
  for (const BlockHash h : hashes) {
    const auto found = lru.where.find(h);
    if (found != lru.where.end()) {
      lru_remove(lru, found->second);  // refresh
      lru_append(lru, found->second);
      continue;
    }
    const std::int32_t e = new_entry(pod, h);
    lru_append(lru, e);
    lru.where.emplace(h, e);
    link_holder(e);
    if (++lru.size > capacity(pod)) erase(lru, lru.oldest);
  }
}

std::vector<std::int32_t> ApproxPrefixIndex::match(std::span<const BlockHash> hashes) const {
  std::vector<std::int32_t> matched(pods_.size(), 0);
  for (const BlockHash h : hashes) {
    const auto it = first_holder_.find(h);
    if (it == first_holder_.end()) break;
    for (std::int32_t e = it->second; e != kNone;
         e = entries_[static_cast<size_t>(e)].next_holder) {
      ++matched[static_cast<size_t>(entries_[static_cast<size_t>(e)].pod)];
    }
  }
  return matched;
}

bool ApproxPrefixIndex::contains(int pod, BlockHash hash) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return false;
  return pods_[static_cast<size_t>(pod)].where.contains(hash);
}

std::int64_t ApproxPrefixIndex::size(int pod) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return 0;
  return pods_[static_cast<size_t>(pod)].size;
}

void ApproxPrefixIndex::remove_pod(int pod) {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return;
  PodLru& lru = pods_[static_cast<size_t>(pod)];
  while (lru.oldest != kNone) erase(lru, lru.oldest);
  lru = PodLru{};
}

}  // namespace fleetsim
