// The host-memory tier of a pod's KV cache: vLLM V1's KV offloading to CPU (the
// OffloadingConnector with its CPU backend, `--kv-offloading-size`). Full blocks are copied to
// host memory as they are computed; a new request whose prefix the GPU no longer holds loads the
// rest of it from here over the PCIe link instead of recomputing it. The tier remembers block
// hashes only (the simulator never holds KV data) and evicts the least recently used.
#pragma once

#include <tsl/robin_map.h>

#include <cstdint>
#include <span>
#include <vector>

#include "models/request.h"

namespace fleetsim {

class HostKvTier {
 public:
  explicit HostKvTier(std::int64_t capacity_blocks);

  // How many of hashes[from], hashes[from + 1], ... (at most `limit`) the tier holds, stopping at
  // the first it does not. Those found become the most recently used.
  std::int32_t load(std::span<const BlockHash> hashes, std::int32_t from, std::int32_t limit);
  // Stores `hash` as the most recently used (refreshes it if held), evicting the least recently
  // used when full; true when it was not held.
  bool store(BlockHash hash);

  std::int64_t capacity() const { return capacity_; }
  std::int64_t size() const { return static_cast<std::int64_t>(index_.size()); }
  std::int64_t evictions() const { return evictions_; }
  bool holds(BlockHash hash) const { return index_.count(hash) > 0; }

 private:
  static constexpr std::int32_t kNone = -1;
  struct Node {
    BlockHash hash = 0;
    std::int32_t prev = kNone;  // towards the least recently used
    std::int32_t next = kNone;  // towards the most recently used
  };
  void unlink(std::int32_t n);
  void push_back(std::int32_t n);

  std::int64_t capacity_;
  std::int64_t evictions_ = 0;
  std::vector<Node> nodes_;  // grows to the capacity, then its slots are reused
  std::int32_t lru_ = kNone;
  std::int32_t mru_ = kNone;
  tsl::robin_map<BlockHash, std::int32_t> index_;
};

}  // namespace fleetsim
