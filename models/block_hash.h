// Chained block hashes as vLLM V1 computes them: hash(block i) = H(hash(block i-1), tokens of
// block i). Only full blocks get a hash. Tokens are pseudo-tokens derived from segment ids, so a
// block is identified by the (segment, offset) spans it covers.
#pragma once

#include <cstdint>
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

// Total tokens of a list of segments.
std::int32_t total_tokens(std::span<const Segment> segments);

}  // namespace fleetsim
