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

namespace {

// Appends to `out` the hashes of the full blocks of `segments` after their first `skip_blocks`
// blocks, whose last hash is `prev` (the root when none is skipped).
void append_block_hashes(std::span<const Segment> segments, std::int32_t block_size,
                         std::int64_t skip_blocks, BlockHash prev, std::vector<BlockHash>& out) {
  if (block_size <= 0) throw InternalError("block size must be positive");
  out.reserve(static_cast<size_t>(total_tokens(segments) / block_size));
  XXH3_state_t* state = XXH3_createState();
  std::int32_t in_block = 0;
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &prev, sizeof prev);
  std::int64_t skip_tokens = skip_blocks * block_size;
  for (const auto& seg : segments) {
    if (skip_tokens >= seg.tokens) {
      skip_tokens -= seg.tokens;
      continue;
    }
    // Blocks start at token multiples of block_size, so resuming at a block boundary inside a
    // segment cuts it into the same spans as hashing it from the start.
    auto offset = static_cast<std::int32_t>(skip_tokens);
    skip_tokens = 0;
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
}

bool starts_with(std::span<const Segment> all, std::span<const Segment> prefix) {
  if (prefix.size() > all.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (all[i].content_id != prefix[i].content_id || all[i].tokens != prefix[i].tokens) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<BlockHash> hash_blocks(std::span<const Segment> segments, std::int32_t block_size,
                                   BlockHash root) {
  std::vector<BlockHash> out;
  append_block_hashes(segments, block_size, 0, root, out);
  return out;
}

void compute_block_hashes(Request& request, std::int32_t block_size) {
  std::vector<Segment> all = request.prompt;
  all.push_back(Segment{request.output_content_id, request.output_tokens});
  request.block_hashes =
      std::make_shared<const std::vector<BlockHash>>(hash_blocks(all, block_size));
  request.hash_block_size = block_size;
}

RequestHasher::RequestHasher(std::int32_t block_size, std::size_t slots)
    : block_size_(block_size), slots_(std::max<std::size_t>(slots, 1)) {
  if (block_size <= 0) throw InternalError("block size must be positive");
}

void RequestHasher::hash(Request& request) {
  scratch_.assign(request.prompt.begin(), request.prompt.end());
  scratch_.push_back(Segment{request.output_content_id, request.output_tokens});
  auto hashes = std::make_shared<std::vector<BlockHash>>();
  Slot* slot = nullptr;
  if (request.conversation >= 0) {
    slot = &slots_[static_cast<std::size_t>(request.conversation) % slots_.size()];
  }
  if (slot != nullptr && slot->conversation == request.conversation &&
      starts_with(scratch_, slot->segments)) {
    const std::vector<BlockHash>& known = *slot->hashes;
    hashes->reserve(static_cast<size_t>(total_tokens(scratch_) / block_size_));
    hashes->assign(known.begin(), known.end());
    append_block_hashes(scratch_, block_size_, static_cast<std::int64_t>(known.size()),
                        known.empty() ? kDefaultRootHash : known.back(), *hashes);
  } else {
    append_block_hashes(scratch_, block_size_, 0, kDefaultRootHash, *hashes);
  }
  request.block_hashes = hashes;
  request.hash_block_size = block_size_;
  if (slot != nullptr) {
    slot->conversation = request.conversation;
    slot->segments.swap(scratch_);
    slot->hashes = std::move(hashes);
  }
}

}  // namespace fleetsim
