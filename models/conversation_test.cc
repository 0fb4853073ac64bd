#include "models/conversation.h"

#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>
#include <map>
#include <set>

#include <vector>

#include "models/block_hash.h"
#include "sim/distribution.h"

namespace fleetsim {
namespace {

// Content kinds as conversation.cc names them.
constexpr std::uint64_t kSystem = 1;
constexpr std::uint64_t kQuestion = 2;
constexpr std::uint64_t kAnswer = 3;
constexpr std::uint64_t kShared = ~0ULL;

DistributionPtr dist(const std::string& yaml) {
  return parse_distribution(YAML::Load(yaml), YamlWhere{"test.yaml", "d"});
}

ConversationShape constant_shape(double sys, double question, double answer,
                                 std::int32_t template_tokens = 0) {
  ConversationShape s;
  s.system_prompt_tokens = constant_distribution(sys);
  s.question_tokens = constant_distribution(question);
  s.answer_tokens = constant_distribution(answer);
  s.template_tokens_per_turn = template_tokens;
  return s;
}

ConversationShape random_shape(bool shared) {
  ConversationShape s;
  s.system_prompt_tokens = dist("{dist: uniform, low: 100, high: 1000}");
  s.shared_system_prompt = shared;
  s.question_tokens = dist("{dist: uniform, low: 10, high: 300}");
  s.answer_tokens = dist("{dist: uniform, low: 20, high: 600}");
  return s;
}

void expect_same_segments(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].content_id, b[i].content_id) << "segment " << i;
    EXPECT_EQ(a[i].tokens, b[i].tokens) << "segment " << i;
  }
}

void expect_same_request(const Request& a, const Request& b) {
  expect_same_segments(a.prompt, b.prompt);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.output_content_id, b.output_content_id);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.conversation, b.conversation);
  EXPECT_EQ(a.session, b.session);
}

TEST(Conversation, ContentIdIsStableAndDistinct) {
  EXPECT_EQ(content_id(kQuestion, 5, 2), content_id(kQuestion, 5, 2));
  EXPECT_NE(content_id(kQuestion, 5, 2), content_id(kAnswer, 5, 2));
  EXPECT_NE(content_id(kQuestion, 5, 2), content_id(kQuestion, 6, 2));
  EXPECT_NE(content_id(kQuestion, 5, 2), content_id(kQuestion, 5, 3));
}

TEST(Conversation, FirstTurnIsSystemPromptAndQuestion) {
  const ConversationShape shape = constant_shape(100, 20, 45);
  Conversation c(7, shape, 42);
  EXPECT_EQ(c.id(), 7);
  EXPECT_EQ(c.next_turn(), 1);
  const Request r = c.make_turn_request();
  expect_same_segments(r.prompt,
                       {{content_id(kSystem, 7, 0), 100}, {content_id(kQuestion, 7, 1), 20}});
  EXPECT_EQ(r.prompt_tokens, 120);
  EXPECT_EQ(r.output_tokens, 45);
  EXPECT_EQ(r.output_content_id, content_id(kAnswer, 7, 1));
  EXPECT_EQ(r.turn, 1);
  EXPECT_EQ(r.conversation, 7);
  EXPECT_EQ(r.session, "conv-7");
  EXPECT_EQ(r.prefix_key(), content_id(kSystem, 7, 0));
  EXPECT_EQ(c.next_turn(), 2);
}

TEST(Conversation, SecondTurnResendsHistoryAndSharesTurnOneBlocks) {
  const ConversationShape shape = constant_shape(100, 20, 45);
  Conversation c(7, shape, 42);
  Request r1 = c.make_turn_request();
  c.complete_turn();
  Request r2 = c.make_turn_request();
  // Turn 2 = turn-1 prompt + answer 1 + question 2 = 120 + 45 + 20 = 185 tokens.
  std::vector<Segment> expected = r1.prompt;
  expected.push_back({content_id(kAnswer, 7, 1), 45});
  expected.push_back({content_id(kQuestion, 7, 2), 20});
  expect_same_segments(r2.prompt, expected);
  EXPECT_EQ(r2.prompt_tokens, 185);
  EXPECT_EQ(r2.turn, 2);
  EXPECT_EQ(r2.output_content_id, content_id(kAnswer, 7, 2));

  compute_block_hashes(r1, 16);
  compute_block_hashes(r2, 16);
  const auto& h1 = *r1.block_hashes;
  const auto& h2 = *r2.block_hashes;
  // Turn 1 hashes prompt + answer = 165 tokens: 10 full blocks. Turn 2 hashes 185 + 45 = 230
  // tokens: 14 blocks, the first 10 equal to turn 1's; block 10 (tokens 160..175) mixes the last
  // 5 answer tokens with question 2, so it has no counterpart in turn 1.
  ASSERT_EQ(h1.size(), 10u);
  ASSERT_EQ(h2.size(), 14u);
  for (size_t i = 0; i < h1.size(); ++i) EXPECT_EQ(h1[i], h2[i]) << "block " << i;
  EXPECT_EQ(hash_blocks(r2.prompt, 16).size(), 11u);  // 185 / 16

  // Another conversation shares nothing (unique system prompts).
  Conversation other(8, shape, 42);
  Request o1 = other.make_turn_request();
  compute_block_hashes(o1, 16);
  EXPECT_NE(o1.block_hashes->at(0), h1[0]);
}

TEST(Conversation, RandomLengthsKeepTheHistoryConsistent) {
  const ConversationShape shape = random_shape(false);
  Conversation c(3, shape, 9);
  Request prev = c.make_turn_request();
  for (int turn = 2; turn <= 5; ++turn) {
    c.complete_turn();
    const Request r = c.make_turn_request();
    ASSERT_EQ(r.prompt.size(), prev.prompt.size() + 2);
    expect_same_segments(std::vector<Segment>(r.prompt.begin(), r.prompt.end() - 2), prev.prompt);
    EXPECT_EQ(r.prompt[r.prompt.size() - 2].content_id, prev.output_content_id);
    EXPECT_EQ(r.prompt[r.prompt.size() - 2].tokens, prev.output_tokens);
    EXPECT_EQ(r.prompt_tokens, prev.prompt_tokens + prev.output_tokens + r.prompt.back().tokens);
    EXPECT_EQ(r.prompt_tokens, total_tokens(r.prompt));
    EXPECT_GE(r.prompt.back().tokens, 10);
    EXPECT_LE(r.prompt.back().tokens, 300);
    EXPECT_EQ(r.turn, turn);
    prev = r;
  }
}

TEST(Conversation, UniqueSystemPromptsDiffer) {
  const ConversationShape shape = random_shape(false);
  Conversation a(1, shape, 5);
  Conversation b(2, shape, 5);
  const Request ra = a.make_turn_request();
  const Request rb = b.make_turn_request();
  EXPECT_EQ(ra.prompt[0].content_id, content_id(kSystem, 1, 0));
  EXPECT_EQ(rb.prompt[0].content_id, content_id(kSystem, 2, 0));
  EXPECT_NE(ra.prompt[0].content_id, rb.prompt[0].content_id);
  EXPECT_NE(ra.prefix_key(), rb.prefix_key());
}

TEST(Conversation, SharedSystemPromptIsIdenticalEverywhere) {
  const ConversationShape shape = random_shape(true);
  std::vector<Request> first;
  for (std::int64_t id = 1; id <= 5; ++id) {
    Conversation c(id, shape, 5);
    first.push_back(c.make_turn_request());
  }
  const Segment sys = first[0].prompt[0];
  EXPECT_EQ(sys.content_id, content_id(kSystem, kShared, 0));
  EXPECT_GE(sys.tokens, 100);
  EXPECT_LE(sys.tokens, 1000);
  const std::vector<BlockHash> sys_hashes = hash_blocks(std::vector<Segment>{sys}, 16);
  for (auto& r : first) {
    EXPECT_EQ(r.prompt[0].content_id, sys.content_id);
    EXPECT_EQ(r.prompt[0].tokens, sys.tokens);
    compute_block_hashes(r, 16);
    // Every full block of the system prompt has the same hash in every conversation.
    for (size_t i = 0; i < sys_hashes.size(); ++i) EXPECT_EQ(r.block_hashes->at(i), sys_hashes[i]);
  }
  // Questions still differ per conversation.
  EXPECT_NE(first[0].prompt[1].content_id, first[1].prompt[1].content_id);
}

TEST(Conversation, PooledSystemPromptsAreDrawnWithReplacement) {
  // guidellm's prefix_count: 40 conversations drawing from 40 prompts share some by chance
  // (about 40 x (1 - (39/40)^40) = 25.5 distinct on average), and a shared prompt is the same
  // text and length wherever it is drawn.
  ConversationShape shape = random_shape(false);
  shape.system_prompt_pool = 40;
  std::map<std::uint64_t, std::int32_t> length_of;
  std::set<std::uint64_t> conversation_ids;
  for (std::int64_t id = 1; id <= 40; ++id) {
    Conversation c(id, shape, 11);
    const Request r = c.make_turn_request();
    const Segment sys = r.prompt[0];
    conversation_ids.insert(content_id(kSystem, static_cast<std::uint64_t>(id), 0));
    EXPECT_EQ(conversation_ids.count(sys.content_id), 0u);  // not the unique-prompt id
    const auto [it, fresh] = length_of.emplace(sys.content_id, sys.tokens);
    if (!fresh) {
      EXPECT_EQ(it->second, sys.tokens);
    }
  }
  EXPECT_GT(length_of.size(), 15u);
  EXPECT_LT(length_of.size(), 36u);
  // A pool of one is one prompt for everybody.
  shape.system_prompt_pool = 1;
  Conversation a(1, shape, 11);
  Conversation b(2, shape, 11);
  EXPECT_EQ(a.make_turn_request().prompt[0].content_id, b.make_turn_request().prompt[0].content_id);
}

TEST(Conversation, SameIdAndSeedGiveSameRequestsWhateverIsCreatedInBetween) {
  const ConversationShape shape = random_shape(false);
  std::vector<Request> alone;
  {
    Conversation c(11, shape, 1234);
    for (int t = 0; t < 4; ++t) {
      alone.push_back(c.make_turn_request());
      c.complete_turn();
    }
  }
  std::vector<Request> interleaved;
  {
    Conversation noise1(12, shape, 1234);
    noise1.make_turn_request();
    Conversation c(11, shape, 1234);
    for (int t = 0; t < 4; ++t) {
      Conversation noise2(100 + t, shape, 1234);
      noise2.make_turn_request();
      noise1.complete_turn();
      noise1.make_turn_request();
      interleaved.push_back(c.make_turn_request());
      c.complete_turn();
    }
  }
  ASSERT_EQ(alone.size(), interleaved.size());
  for (size_t i = 0; i < alone.size(); ++i) expect_same_request(alone[i], interleaved[i]);

  // A different seed draws different lengths (4 turns of uniform draws: all equal is implausible).
  Conversation other(11, shape, 99);
  bool any_differs = false;
  for (int t = 0; t < 4; ++t) {
    const Request r = other.make_turn_request();
    other.complete_turn();
    any_differs = any_differs || r.prompt_tokens != alone[static_cast<size_t>(t)].prompt_tokens ||
                  r.output_tokens != alone[static_cast<size_t>(t)].output_tokens;
  }
  EXPECT_TRUE(any_differs);
}

TEST(Conversation, TemplateTokensAreAddedToEachQuestion) {
  const ConversationShape shape = constant_shape(50, 20, 30, 7);
  Conversation c(1, shape, 3);
  const Request r1 = c.make_turn_request();
  EXPECT_EQ(r1.prompt[1].tokens, 27);  // 20 + 7
  EXPECT_EQ(r1.prompt_tokens, 77);     // 50 + 27
  EXPECT_EQ(r1.output_tokens, 30);     // answers get no template tokens
  c.complete_turn();
  const Request r2 = c.make_turn_request();
  EXPECT_EQ(r2.prompt.back().tokens, 27);
  EXPECT_EQ(r2.prompt_tokens, 77 + 30 + 27);
}

TEST(Conversation, ZeroLengthSystemPromptIsLeftOut) {
  const ConversationShape shape = constant_shape(0, 20, 30);
  Conversation c(4, shape, 3);
  const Request r = c.make_turn_request();
  expect_same_segments(r.prompt, {{content_id(kQuestion, 4, 1), 20}});
  EXPECT_EQ(r.prompt_tokens, 20);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(ConversationTenants, EachTenantSharesItsOwnSystemPrompt) {
  ConversationShape shape;
  shape.system_prompt_tokens = constant_distribution(64);
  shape.shared_system_prompt = true;
  shape.question_tokens = constant_distribution(10);
  shape.answer_tokens = constant_distribution(5);
  Conversation a1(1, shape, 7, "support"), a2(2, shape, 7, "support"), b(3, shape, 7, "coding");
  const Request r1 = a1.make_turn_request(), r2 = a2.make_turn_request(),
                r3 = b.make_turn_request();
  EXPECT_EQ(r1.prompt.front().content_id, r2.prompt.front().content_id);
  EXPECT_NE(r1.prompt.front().content_id, r3.prompt.front().content_id);
  EXPECT_EQ(r1.tenant, "support");
  EXPECT_EQ(r1.session, "support/conv-1");
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// The question (the prompt's last segment) and answer lengths of each of `turns` turns.
std::vector<std::pair<std::int32_t, std::int32_t>> turn_lengths(Conversation& c, int turns) {
  std::vector<std::pair<std::int32_t, std::int32_t>> out;
  for (int t = 0; t < turns; ++t) {
    const Request r = c.make_turn_request();
    out.emplace_back(r.prompt.back().tokens, r.output_tokens);
    c.complete_turn();
  }
  return out;
}

TEST(Conversation, LengthsDrawnPerConversationStayTheSameEveryTurn) {
  ConversationShape per_turn = random_shape(false);
  ConversationShape per_conversation = random_shape(false);
  per_conversation.lengths_per_conversation = true;
  std::set<std::pair<std::int32_t, std::int32_t>> first_turns;
  for (std::int64_t id = 0; id < 20; ++id) {
    Conversation fixed(id, per_conversation, 5);
    const auto lengths = turn_lengths(fixed, 6);
    for (const auto& l : lengths) EXPECT_EQ(l, lengths.front()) << "conversation " << id;
    first_turns.insert(lengths.front());
    // The first turn draws what a per-turn conversation draws first; later turns differ there.
    Conversation fresh(id, per_turn, 5);
    const auto drawn = turn_lengths(fresh, 6);
    EXPECT_EQ(drawn.front(), lengths.front());
    EXPECT_GT(std::set(drawn.begin(), drawn.end()).size(), 1u) << "conversation " << id;
  }
  EXPECT_GT(first_turns.size(), 10u);  // conversations still differ from each other
}

}  // namespace
}  // namespace fleetsim
