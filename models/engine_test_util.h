// Requests for the engine's tests: a prompt of content segments, hashed at the engine's block
// size, with an output of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "models/block_hash.h"
#include "models/request.h"

namespace fleetsim {

inline RequestPtr engine_request(std::int64_t id, std::vector<Segment> segments,
                                 std::int32_t output_tokens, std::int32_t block_size) {
  auto r = std::make_shared<Request>();
  r->id = id;
  r->prompt = std::move(segments);
  for (const Segment& s : r->prompt) r->prompt_tokens += s.tokens;
  r->output_tokens = output_tokens;
  r->output_content_id = 900000 + static_cast<std::uint64_t>(id);
  compute_block_hashes(*r, block_size);
  return r;
}

}  // namespace fleetsim
