#include "models/trace_openai.h"

#include <gtest/gtest.h>

#include "models/block_hash.h"
#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

using testing::trace_error_of;
using testing::write_temp;

TEST(OpenAiChatTrace, CountsCharactersNotBytes) {
  EXPECT_EQ(utf8_length("abcd"), 4);
  EXPECT_EQ(utf8_length("h\xC3\xA9llo"), 5);              // héllo
  EXPECT_EQ(utf8_length("\xE6\x97\xA5\xE6\x9C\xAC"), 2);  // 日本
}

TEST(OpenAiChatTrace, EachMessageIsASegmentAndResentHistoriesShareIt) {
  const std::string sys = std::string(400, 's');
  const std::string path = write_temp(
      "chat.jsonl",
      "{\"messages\": [{\"role\": \"system\", \"content\": \"" + sys +
          "\"}, {\"role\": \"user\", \"content\": \"hello\"}], \"max_tokens\": 64}\n"
          "{\"messages\": [{\"role\": \"system\", \"content\": \"" +
          sys +
          "\"}, {\"role\": \"user\", \"content\": \"hello\"}, {\"role\": \"assistant\", "
          "\"content\": \"hi there\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", "
          "\"text\": \"more\"}, {\"type\": \"image_url\", \"image_url\": {}}]}], "
          "\"max_completion_tokens\": 9, \"user\": \"alice\"}\n"
          "{\"messages\": [{\"role\": \"user\", \"content\": \"" +
          sys + "\"}]}\n");
  OpenAiChatOptions o;
  o.default_max_tokens = 33;
  o.interval_ms = 250;
  const Trace t = read_openai_chat_trace(path, o);
  ASSERT_EQ(t.requests.size(), 3u);
  const Request& a = t.requests[0];
  const Request& b = t.requests[1];
  ASSERT_EQ(a.prompt.size(), 2u);
  ASSERT_EQ(b.prompt.size(), 4u);
  EXPECT_EQ(a.prompt[0].tokens, 100);  // 400 characters / 4
  EXPECT_EQ(a.prompt[1].tokens, 2);    // ceil(5 / 4)
  EXPECT_EQ(b.prompt[2].tokens, 2);    // "hi there": ceil(8 / 4)
  EXPECT_EQ(b.prompt[3].tokens, 1);    // the text parts only: "more"
  EXPECT_EQ(a.prompt_tokens, 102);
  EXPECT_EQ(b.prompt_tokens, 105);
  EXPECT_EQ(a.prompt[0].content_id, b.prompt[0].content_id);
  EXPECT_EQ(a.prompt[1].content_id, b.prompt[1].content_id);
  // The same text under another role is other content.
  EXPECT_NE(t.requests[2].prompt[0].content_id, a.prompt[0].content_id);
  EXPECT_EQ(a.output_tokens, 64);
  EXPECT_EQ(b.output_tokens, 9);
  EXPECT_EQ(t.requests[2].output_tokens, 33);
  EXPECT_EQ(a.turn, 1);
  EXPECT_EQ(b.turn, 2);
  EXPECT_EQ(b.session, "alice");
  // No timestamps: one interval apart, from 0.
  EXPECT_EQ(a.arrival, 0);
  EXPECT_EQ(b.arrival, 250 * kNsPerMs);
  EXPECT_EQ(t.requests[2].arrival, 500 * kNsPerMs);
  // Shared messages mean shared engine blocks: the 100 + 2 tokens give 6 full blocks of 16.
  const auto ha = hash_blocks(a.prompt, 16);
  const auto hb = hash_blocks(b.prompt, 16);
  ASSERT_EQ(ha.size(), 6u);
  EXPECT_TRUE(std::equal(ha.begin(), ha.end(), hb.begin()));
}

TEST(OpenAiChatTrace, LaterTurnsJoinTheConversationTheirOpeningBegan) {
  const auto line = [](const std::string& user, const std::string& first, bool second_turn) {
    std::string messages = R"({"role": "system", "content": "be brief"}, )"
                           R"({"role": "user", "content": ")" +
                           first + "\"}";
    if (second_turn) {
      messages +=
          R"(, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"})";
    }
    return R"({"messages": [)" + messages + "]" +
           (user.empty() ? "" : R"(, "user": ")" + user + "\"") + "}\n";
  };
  const Trace t = read_openai_chat_trace(write_temp(
      "conversations.jsonl", line("", "plan a trip", false) + line("", "fix my code", false) +
                                 line("", "plan a trip", true) + line("bob", "plan a trip", true) +
                                 R"({"messages": [{"role": "system", "content": "x"}]})"
                                 "\n"));
  ASSERT_EQ(t.requests.size(), 5u);
  EXPECT_EQ(t.requests[0].conversation, 0);
  EXPECT_EQ(t.requests[1].conversation, 1);
  EXPECT_EQ(t.requests[2].conversation, 0) << "the same opening continues conversation 0";
  EXPECT_EQ(t.requests[2].turn, 2);
  EXPECT_EQ(t.requests[3].conversation, 2) << "another user's same opening is another chat";
  EXPECT_EQ(t.requests[4].conversation, -1) << "no user message, no conversation";
}

TEST(OpenAiChatTrace, TimestampsAndBatchBodies) {
  const Trace t = read_openai_chat_trace(write_temp(
      "batch.jsonl",
      "{\"custom_id\": \"r1\", \"method\": \"POST\", \"url\": \"/v1/chat/completions\", "
      "\"body\": {\"messages\": [{\"role\": \"user\", \"content\": \"abcdefgh\"}], "
      "\"max_tokens\": 5}, \"timestamp\": 1000}\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"timestamp\": 1500.5}\n"
      "{\"messages\": [{\"role\": \"user\", \"content\": \"y\"}]}\n"));
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[0].prompt_tokens, 2);
  EXPECT_EQ(t.requests[0].output_tokens, 5);
  EXPECT_EQ(t.requests[0].arrival, 1000 * kNsPerMs);
  EXPECT_EQ(t.requests[1].arrival, 1'500'500'000);
  EXPECT_EQ(t.requests[2].arrival, 1'600'500'000);  // default interval 100 ms
}

TEST(OpenAiChatTrace, ErrorsNameFileLineAndField) {
  auto error_for = [](const std::string& name, const std::string& text) {
    const std::string path = write_temp(name, text);
    return trace_error_of([&] { read_openai_chat_trace(path); }).substr(path.size());
  };
  EXPECT_EQ(error_for("o1.jsonl", "{\"max_tokens\": 5}\n"), ":1: messages: missing field");
  EXPECT_EQ(error_for("o2.jsonl", "{\"messages\": []}\n"),
            ":1: messages: expected a non-empty list of {role, content}, got array");
  EXPECT_EQ(error_for("o3.jsonl", "{\"messages\": [{\"content\": \"a\"}]}\n"),
            ":1: messages[0].role: missing field");
  EXPECT_EQ(error_for("o4.jsonl", "{\"messages\": [{\"role\": \"user\", \"content\": 5}]}\n"),
            ":1: messages[0].content: expected a string or a list of parts, got number");
  EXPECT_EQ(error_for("o5.jsonl",
                      "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], "
                      "\"max_tokens\": \"many\"}\n"),
            ":1: max_tokens: expected an integer, got a string 'many'");
  EXPECT_EQ(
      error_for("o6.jsonl",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"timestamp\": 9}\n"
                "{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}], \"timestamp\": 8}\n"),
      ":2: timestamp: timestamps must not go back: 8 ms after 9 ms on an earlier line");
}

}  // namespace
}  // namespace fleetsim
