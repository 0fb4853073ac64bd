#include "models/host_kv_tier.h"

#include <limits>

#include "sim/errors.h"

namespace fleetsim {

HostKvTier::HostKvTier(std::int64_t capacity_blocks) : capacity_(capacity_blocks) {
  if (capacity_ < 1 || capacity_ > std::numeric_limits<std::int32_t>::max()) {
    throw ScenarioError("the KV offload tier must hold between 1 and 2^31 - 1 blocks, got " +
                        std::to_string(capacity_));
  }
}

void HostKvTier::unlink(std::int32_t n) {
  Node& node = nodes_[static_cast<size_t>(n)];
  if (node.prev != kNone) nodes_[static_cast<size_t>(node.prev)].next = node.next;
  if (node.next != kNone) nodes_[static_cast<size_t>(node.next)].prev = node.prev;
  if (lru_ == n) lru_ = node.next;
  if (mru_ == n) mru_ = node.prev;
  node.prev = node.next = kNone;
}

void HostKvTier::push_back(std::int32_t n) {
  Node& node = nodes_[static_cast<size_t>(n)];
  node.prev = mru_;
  node.next = kNone;
  if (mru_ != kNone) nodes_[static_cast<size_t>(mru_)].next = n;
  mru_ = n;
  if (lru_ == kNone) lru_ = n;
}

std::int32_t HostKvTier::load(std::span<const BlockHash> hashes, std::int32_t from,
                              std::int32_t limit) {
  std::int32_t found = 0;
  for (auto i = static_cast<size_t>(from); i < hashes.size() && found < limit; ++i, ++found) {
    const auto it = index_.find(hashes[i]);
    if (it == index_.end()) break;
    unlink(it->second);
    push_back(it->second);
  }
  return found;
}

bool HostKvTier::store(BlockHash hash) {
  if (const auto it = index_.find(hash); it != index_.end()) {
    unlink(it->second);
    push_back(it->second);
    return false;
  }
  std::int32_t slot = kNone;
  if (static_cast<std::int64_t>(nodes_.size()) < capacity_) {
    slot = static_cast<std::int32_t>(nodes_.size());
    nodes_.emplace_back();
  } else {
    slot = lru_;
    unlink(slot);
    index_.erase(nodes_[static_cast<size_t>(slot)].hash);
    ++evictions_;
  }
  nodes_[static_cast<size_t>(slot)].hash = hash;
  push_back(slot);
  index_.emplace(hash, slot);
  return true;
}

}  // namespace fleetsim
