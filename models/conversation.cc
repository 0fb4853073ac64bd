#include "models/conversation.h"

#include <xxhash.h>

#include "models/block_hash.h"
#include "sim/distribution.h"

namespace fleetsim {
namespace {
constexpr std::uint64_t kSystemPrompt = 1;
constexpr std::uint64_t kQuestion = 2;
constexpr std::uint64_t kAnswer = 3;
constexpr std::uint64_t kSharedConversation = ~0ULL;
// Pooled prompts live in their own id space, apart from conversation ids.
constexpr std::uint64_t kPooledPromptBase = 1ULL << 62;
}  // namespace

ConversationShape conversation_shape_from(const Params& p) {
  ConversationShape shape;
  shape.system_prompt_tokens = p.get_distribution_ptr("system_prompt_tokens");
  shape.shared_system_prompt = p.get_bool("shared_system_prompt");
  shape.system_prompt_pool = static_cast<std::int32_t>(p.get_int("system_prompt_pool"));
  shape.question_tokens = p.get_distribution_ptr("question_tokens");
  shape.answer_tokens = p.get_distribution_ptr("answer_tokens");
  shape.template_tokens_per_turn = static_cast<std::int32_t>(p.get_int("template_tokens_per_turn"));
  shape.lengths_per_conversation = p.get_string("lengths_per") == "conversation";
  // A chat may have no system prompt, but each turn asks something and gets an answer of at
  // least one token (a prompt of only template tokens, or none, is no request).
  require_tokens(*shape.system_prompt_tokens, "workload.system_prompt_tokens", 0);
  require_tokens(*shape.question_tokens, "workload.question_tokens", 1);
  require_tokens(*shape.answer_tokens, "workload.answer_tokens", 1);
  return shape;
}

std::uint64_t content_id(std::uint64_t kind, std::uint64_t conversation, std::uint64_t turn) {
  const std::uint64_t key[3] = {kind, conversation, turn};
  return XXH3_64bits(key, sizeof key);
}

Conversation::Conversation(std::int64_t id, const ConversationShape& shape, std::uint64_t seed,
                           std::string tenant)
    : id_(id),
      tenant_(std::move(tenant)),
      shape_(&shape),
      rng_(make_rng(seed, "conversation/" + std::to_string(id))) {
  const std::uint64_t shared_id =
      tenant_.empty() ? kSharedConversation : XXH3_64bits(tenant_.data(), tenant_.size());
  const auto conv = shape.shared_system_prompt ? shared_id : static_cast<std::uint64_t>(id);
  std::int32_t sys_tokens = 0;
  if (!shape.shared_system_prompt && shape.system_prompt_pool > 0) {
    // The pick and the prompt's length come from streams of their own, so a pooled prompt has
    // one length whoever draws it and the conversation's other draws do not move.
    Rng pick = make_rng(seed, "conversation/" + std::to_string(id) + "/system-pool");
    const std::uint64_t index = pick() % static_cast<std::uint64_t>(shape.system_prompt_pool);
    Rng length = make_rng(seed, "conversation/system-pool/" + std::to_string(index));
    sys_tokens = sample_tokens(*shape.system_prompt_tokens, length, 0);
    if (sys_tokens > 0) {
      history_.push_back(
          Segment{content_id(kSystemPrompt, kPooledPromptBase + index, 0), sys_tokens});
    }
    return;
  }
  if (shape.shared_system_prompt) {
    // One length for everyone: drawn from a stream all conversations share.
    Rng shared = make_rng(
        seed, "conversation/shared-system" + (tenant_.empty() ? std::string() : "/" + tenant_));
    sys_tokens = sample_tokens(*shape.system_prompt_tokens, shared, 0);
  } else {
    sys_tokens = sample_tokens(*shape.system_prompt_tokens, rng_, 0);
  }
  if (sys_tokens > 0) history_.push_back(Segment{content_id(kSystemPrompt, conv, 0), sys_tokens});
}

Request Conversation::make_turn_request() {
  ++turn_;
  const auto conv = static_cast<std::uint64_t>(id_);
  const auto turn = static_cast<std::uint64_t>(turn_);
  if (turn_ == 1 || !shape_->lengths_per_conversation) {
    question_tokens_ = sample_tokens(*shape_->question_tokens, rng_);
    answer_tokens_ = sample_tokens(*shape_->answer_tokens, rng_);
  }
  const std::int32_t q = question_tokens_ + shape_->template_tokens_per_turn;
  const std::int32_t a = answer_tokens_;
  history_.push_back(Segment{content_id(kQuestion, conv, turn), q});
  pending_answer_ = Segment{content_id(kAnswer, conv, turn), a};

  Request r;
  r.conversation = id_;
  r.turn = turn_;
  r.session = (tenant_.empty() ? "" : tenant_ + "/") + "conv-" + std::to_string(id_);
  r.tenant = tenant_;
  r.prompt = history_;
  r.prompt_tokens = total_tokens(history_);
  r.output_tokens = a;
  r.output_content_id = pending_answer_.content_id;
  return r;
}

void Conversation::complete_turn() { history_.push_back(pending_answer_); }

ParamSpec& add_conversation_shape_params(ParamSpec& spec, const ConversationShapeDefaults& d) {
  return spec
      .distribution("system_prompt_tokens", constant_distribution(d.system_prompt_tokens),
                    "system prompt length in tokens (0 = none)")
      .boolean("shared_system_prompt", false,
               "one system prompt for every conversation (else unique per conversation)")
      .integer("system_prompt_pool", 0,
               "draw each conversation's system prompt, with replacement, from this many prompts "
               "(guidellm's prefix_count: some conversations then share one); 0 = unique each",
               0)
      .distribution("question_tokens", constant_distribution(d.question_tokens),
                    "tokens of each user question (with one turn and no system prompt, the whole "
                    "prompt)")
      .distribution("answer_tokens", constant_distribution(d.answer_tokens),
                    "tokens generated per turn (max_tokens reached)")
      .integer("template_tokens_per_turn", d.template_tokens_per_turn,
               "chat-template tokens around each exchange (role markers, end-of-turn)", 0,
               kMaxTokens)
      .text("lengths_per", "turn",
            "when question_tokens and answer_tokens are drawn: 'turn' = afresh every turn; "
            "'conversation' = once, kept for every turn (guidellm's synthetic data: one "
            "prompt_tokens and output_tokens per conversation, data/deserializers/synthetic.py)",
            {"turn", "conversation"});
}

}  // namespace fleetsim
