// Chained block hashes as vLLM V1 computes them: hash(block i) = H(hash(block i-1), tokens of
// block i). Only full blocks get a hash. Tokens are pseudo-tokens derived from segment ids, so a
// block is identified by the (segment, offset) spans it covers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "models/request.h"

namespace fleetsim {

// Root hash of the chain (vLLM's NONE_HASH); distinct seeds give distinct hash families.
inline constexpr BlockHash kDefaultRootHash = 0x9e3779b97f4a7c15ULL;

// Hashes the full blocks of `segments` followed by `extra` (e.g. the output segment).
std::vector<BlockHash> hash_blocks(std::span<const Segment> segments, std::int32_t block_size,
                                   BlockHash root = kDefaultRootHash);

// Sets request.block_hashes over prompt + output at `block_size`.
void compute_block_hashes(Request& request, std::int32_t block_size);

// Hashes requests as compute_block_hashes does, reusing the chain of a conversation's previous
// request where the new prompt starts with that request's prompt and output, as a chat turn
// resends its history: a turn hashes only the blocks it adds. Remembers the latest request of
// a bounded number of conversations (one slot each, by id), so memory stays flat however many
// conversations a run has; a conversation that lost its slot is hashed from the start.
class RequestHasher {
 public:
  explicit RequestHasher(std::int32_t block_size, std::size_t slots = 8192);
  void hash(Request& request);

 private:
  struct Slot {
    std::int64_t conversation = -1;
    std::vector<Segment> segments;  // the remembered request's prompt and output
    std::shared_ptr<const std::vector<BlockHash>> hashes;
  };
  std::int32_t block_size_;
  std::vector<Slot> slots_;
  std::vector<Segment> scratch_;
};

// Total tokens of a list of segments.
std::int32_t total_tokens(std::span<const Segment> segments);

}  // namespace fleetsim
