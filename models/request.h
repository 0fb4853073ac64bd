// A request as the fleet sees it: its prompt is a list of content segments (system prompt, each
// question, each answer). Two prompts share KV blocks exactly where their content matches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/time.h"

namespace fleetsim {

using BlockHash = std::uint64_t;

// A run of `tokens` pseudo-tokens; token i of a segment is a pure function of (content_id, i),
// so equal ids mean equal text.
struct Segment {
  std::uint64_t content_id = 0;
  std::int32_t tokens = 0;
};

struct Request {
  std::int64_t id = 0;
  std::int64_t conversation = -1;  // -1: not part of a conversation
  std::int32_t turn = 0;           // 1-based turn within its conversation
  std::string session;             // session id as a client would send it
  std::string model;
  std::vector<Segment> prompt;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;  // tokens the request generates
  std::uint64_t output_content_id = 0;
  TimeNs arrival = 0;        // when the client sent it (its first attempt)
  std::int32_t attempt = 1;  // 1 for the first try; a client's retry sends attempt + 1
  // False for requests sent during a workload's warm-up (or outside its measurement window):
  // they load the fleet but summaries leave them out.
  bool measured = true;
  std::string tier;       // tier hint for tier routing (e.g. "small", "big"); empty = none
  std::string slo_class;  // SLO class (e.g. "interactive", "batch"); empty = default
  // The priority of its SLO class, as a Gateway API Inference Extension objective gives one:
  // higher is served first (vLLM's request priority is its negation: lower first).
  std::int32_t priority = 0;
  std::string tenant;  // the tenant (application, team) a conversation belongs to; may be empty
  // The client's keep-alive connection it is sent on (a closed-loop client worker, a stream, an
  // agent session); -1: a connection of its own. Read by a gateway that balances connections.
  std::int64_t connection = -1;
  // Prefill/decode disaggregation: the prefill pod the router chose for this attempt (-1: the
  // pod that serves it computes its prompt too); on the prefill leg a decode pod sends there,
  // that decode pod.
  std::int32_t prefill_pod = -1;
  std::int32_t prefill_leg_for = -1;

  // Chained hashes of every full block of prompt + output, at the engine's block size.
  // Computed once when the request is made; shared with routers that hash at the same size.
  std::shared_ptr<const std::vector<BlockHash>> block_hashes;
  std::int32_t hash_block_size = 0;

  // Leading bytes of the prompt as a gateway would hash them: the first segment (system prompt).
  std::uint64_t prefix_key() const { return prompt.empty() ? 0 : prompt.front().content_id; }
  // Characters of the prompt, for routers that count characters (about 4 per token).
  std::int64_t prompt_chars(double chars_per_token) const {
    return static_cast<std::int64_t>(prompt_tokens * chars_per_token);
  }
};

using RequestPtr = std::shared_ptr<Request>;

}  // namespace fleetsim
