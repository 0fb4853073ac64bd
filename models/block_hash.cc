#include "models/block_hash.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>
#include <string>

#include "sim/errors.h"

namespace fleetsim {

std::int32_t total_tokens(std::span<const Segment> segments) {
  std::int64_t n = 0;
  for (const auto& s : segments) n += s.tokens;
  // Each segment is at most 1e7 tokens, but a long history of them can pass 2^31 - 1.
  if (n > std::numeric_limits<std::int32_t>::max()) {
    throw ScenarioError("a prompt of " + std::to_string(n) +
                        " tokens: longer than any model's context (shorten the workload's "
                        "turns or token lengths)");
  }
  return static_cast<std::int32_t>(n);
}

std::vector<BlockHash> hash_blocks(std::span<const Segment> segments, std::int32_t block_size,
                                   BlockHash root) {
  if (block_size <= 0) throw InternalError("block size must be positive");
  std::vector<BlockHash> out;
  out.reserve(static_cast<size_t>(total_tokens(segments) / block_size));
  XXH3_state_t* state = XXH3_createState();
  BlockHash prev = root;
  std::int32_t in_block = 0;
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &prev, sizeof prev);
  for (const auto& seg : segments) {
    std::int32_t offset = 0;
    while (offset < seg.tokens) {
      const std::int32_t take = std::min(seg.tokens - offset, block_size - in_block);
      // A span (content, offset, length) stands for those tokens exactly.
      const std::uint64_t span[3] = {seg.content_id, static_cast<std::uint64_t>(offset),
                                     static_cast<std::uint64_t>(take)};
      XXH3_64bits_update(state, span, sizeof span);
      offset += take;
      in_block += take;
      if (in_block == block_size) {
        prev = XXH3_64bits_digest(state);
        out.push_back(prev);
        in_block = 0;
        XXH3_64bits_reset(state);
        XXH3_64bits_update(state, &prev, sizeof prev);
      }
    }
  }
  XXH3_freeState(state);
  return out;
}

void compute_block_hashes(Request& request, std::int32_t block_size) {
  std::vector<Segment> all = request.prompt;
  all.push_back(Segment{request.output_content_id, request.output_tokens});
  request.block_hashes =
      std::make_shared<const std::vector<BlockHash>>(hash_blocks(all, block_size));
  request.hash_block_size = block_size;
}

}  // namespace fleetsim
