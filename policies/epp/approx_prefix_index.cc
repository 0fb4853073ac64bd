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

void ApproxPrefixIndex::unlink(int pod, BlockHash hash) {
  auto it = hash_to_pods_.find(hash);
  if (it == hash_to_pods_.end()) return;
  auto& holders = it->second;
  holders.erase(std::remove(holders.begin(), holders.end(), pod), holders.end());
  if (holders.empty()) hash_to_pods_.erase(it);
}

void ApproxPrefixIndex::add(int pod, std::span<const BlockHash> hashes) {
  PodLru& lru = lru_for(pod);
  for (const BlockHash h : hashes) {
    auto found = lru.where.find(h);
    if (found != lru.where.end()) {
      lru.order.splice(lru.order.end(), lru.order, found->second);  // refresh
      continue;
    }
    lru.order.push_back(h);
    lru.where.emplace(h, std::prev(lru.order.end()));
    hash_to_pods_[h].push_back(pod);
    if (static_cast<std::int64_t>(lru.order.size()) > capacity(pod)) {
      const BlockHash victim = lru.order.front();
      lru.order.pop_front();
      lru.where.erase(victim);
      unlink(pod, victim);
    }
  }
}

std::vector<std::int32_t> ApproxPrefixIndex::match(std::span<const BlockHash> hashes) const {
  std::vector<std::int32_t> matched(pods_.size(), 0);
  for (const BlockHash h : hashes) {
    auto it = hash_to_pods_.find(h);
    if (it == hash_to_pods_.end()) break;
    for (const int pod : it->second) ++matched[static_cast<size_t>(pod)];
  }
  return matched;
}

bool ApproxPrefixIndex::contains(int pod, BlockHash hash) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return false;
  return pods_[static_cast<size_t>(pod)].where.count(hash) > 0;
}

std::int64_t ApproxPrefixIndex::size(int pod) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return 0;
  return static_cast<std::int64_t>(pods_[static_cast<size_t>(pod)].order.size());
}

void ApproxPrefixIndex::remove_pod(int pod) {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return;
  PodLru& lru = pods_[static_cast<size_t>(pod)];
  for (const BlockHash h : lru.order) unlink(pod, h);
  lru = PodLru{};
}

}  // namespace fleetsim
