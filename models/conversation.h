// Content of multi-turn conversations: the segments each turn adds and the lengths drawn for
// them. Every conversation draws from its own random stream, so its content does not depend on
// how turns of different conversations interleave in time.
#pragma once

#include <cstdint>
#include <vector>

#include "models/request.h"
#include "sim/params.h"
#include "sim/rng.h"

namespace fleetsim {

struct ConversationShape {
  DistributionPtr system_prompt_tokens;
  bool shared_system_prompt = false;  // one system prompt for all conversations
  // > 0: each conversation draws its system prompt, with replacement, from this many prompts
  // (guidellm's prefix_count), so some conversations share one by chance.
  std::int32_t system_prompt_pool = 0;
  DistributionPtr question_tokens;
  DistributionPtr answer_tokens;
  std::int32_t template_tokens_per_turn = 0;  // chat-template tokens wrapping each exchange
  // Draw the question and answer lengths once per conversation and keep them every turn, as
  // guidellm's synthetic data does (one prompt_tokens and output_tokens per row); else per turn.
  bool lengths_per_conversation = false;
};

// The shape from a workload's parameters (system_prompt_tokens, shared_system_prompt,
// system_prompt_pool, question_tokens, answer_tokens, template_tokens_per_turn, lengths_per).
ConversationShape conversation_shape_from(const Params& p);

// Stable content ids: the same (kind, conversation, turn) always names the same text.
std::uint64_t content_id(std::uint64_t kind, std::uint64_t conversation, std::uint64_t turn);

class Conversation {
 public:
  // A tenant's conversations share its system prompt when the shape's prompt is shared.
  Conversation(std::int64_t id, const ConversationShape& shape, std::uint64_t seed,
               std::string tenant = "");

  std::int64_t id() const { return id_; }
  std::int32_t next_turn() const { return turn_ + 1; }
  // The request of the next turn: the whole history plus a new question; its answer is drawn
  // now so its tokens are known when they are cached.
  Request make_turn_request();
  // Appends the answer of the last turn to the history (the client resends it next turn).
  void complete_turn();

 private:
  std::int64_t id_;
  std::string tenant_;
  const ConversationShape* shape_;
  Rng rng_;
  std::int32_t turn_ = 0;
  std::vector<Segment> history_;
  Segment pending_answer_{};
  std::int32_t question_tokens_ = 0;  // this turn's lengths (kept when drawn per conversation)
  std::int32_t answer_tokens_ = 0;
};

// Defaults of the conversation-shape parameters, which differ by client.
struct ConversationShapeDefaults {
  double system_prompt_tokens = 0;
  double question_tokens = 100;
  double answer_tokens = 100;
  std::int64_t template_tokens_per_turn = 0;
};

// Adds the parameters conversation_shape_from reads (system_prompt_tokens, shared_system_prompt,
// system_prompt_pool, question_tokens, answer_tokens, template_tokens_per_turn, lengths_per).
ParamSpec& add_conversation_shape_params(ParamSpec& spec, const ConversationShapeDefaults& d);

}  // namespace fleetsim
