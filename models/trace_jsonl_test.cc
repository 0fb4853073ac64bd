#include "models/trace_jsonl.h"

#include <gtest/gtest.h>

#include <sstream>

#include "models/block_hash.h"
#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

using testing::trace_error_of;
using testing::write_temp;

std::vector<Request> sample_requests() {
  std::vector<Request> v(3);
  v[0].arrival = 0;
  v[0].conversation = 3;
  v[0].turn = 1;
  v[0].session = "conv-3";
  v[0].prompt = {{0xFFFFFFFFFFFFFFF1ULL, 2000}, {42, 17}};
  v[0].prompt_tokens = 2017;
  v[0].output_tokens = 40;
  v[0].output_content_id = 0x8000000000000000ULL;
  v[0].tier = "big";
  v[0].slo_class = "interactive";
  v[1].arrival = 1'234'567'891;  // not a whole number of microseconds
  v[1].prompt = {{7, 1}};
  v[1].prompt_tokens = 1;
  v[1].output_tokens = 1;
  v[1].output_content_id = 9;
  v[1].measured = false;
  v[2].arrival = 86'400'000'000'007;  // a day and 7 ns
  v[2].prompt = {{0xFFFFFFFFFFFFFFF1ULL, 2000}, {42, 17}, {43, 100}};
  v[2].prompt_tokens = 2117;
  v[2].output_tokens = 5;
  return v;
}

void expect_same(const Request& a, const Request& b) {
  EXPECT_EQ(a.arrival, b.arrival);
  EXPECT_EQ(a.conversation, b.conversation);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.session, b.session);
  ASSERT_EQ(a.prompt.size(), b.prompt.size());
  for (std::size_t i = 0; i < a.prompt.size(); ++i) {
    EXPECT_EQ(a.prompt[i].content_id, b.prompt[i].content_id);
    EXPECT_EQ(a.prompt[i].tokens, b.prompt[i].tokens);
  }
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.output_content_id, b.output_content_id);
  EXPECT_EQ(a.tier, b.tier);
  EXPECT_EQ(a.slo_class, b.slo_class);
  EXPECT_EQ(a.measured, b.measured);
}

TEST(JsonlTrace, WriteThenReadGivesTheSameRequests) {
  const std::vector<Request> in = sample_requests();
  const std::string path = ::testing::TempDir() + "/roundtrip.jsonl";
  write_trace_jsonl(path, in);
  const Trace t = read_trace_jsonl(path);
  ASSERT_EQ(t.requests.size(), in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(i);
    expect_same(in[i], t.requests[i]);
  }
}

TEST(JsonlTrace, WritesTheDocumentedFields) {
  std::ostringstream os;
  write_trace_jsonl(os, std::vector<Request>{sample_requests()[1]});
  EXPECT_EQ(os.str(),
            "{\"measured\":false,\"output_id\":9,\"output_tokens\":1,\"prompt\":[{\"id\":7,"
            "\"tokens\":1}],\"prompt_tokens\":1,\"timestamp_ms\":1234.567891}\n");
}

TEST(JsonlTrace, PromptTokensAloneMeansUniqueContent) {
  const Trace t = read_trace_jsonl(
      write_temp("pt.jsonl",
                 "{\"timestamp_ms\": 0, \"prompt_tokens\": 100, \"output_tokens\": 2}\n"
                 "{\"timestamp_ms\": 1.5, \"prompt_tokens\": 100, \"output_tokens\": 2, "
                 "\"prompt\": null, \"tier\": \"small\"}\n"
                 "{\"timestamp_ms\": 2, \"prompt\": [{\"id\": \"0xff\", \"tokens\": 3}, "
                 "{\"id\": \"18446744073709551615\", \"tokens\": 4}], \"output_tokens\": 1}\n"));
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[0].prompt.size(), 1u);
  EXPECT_EQ(t.requests[0].prompt[0].tokens, 100);
  EXPECT_NE(t.requests[0].prompt[0].content_id, t.requests[1].prompt[0].content_id);
  EXPECT_EQ(t.requests[1].arrival, 1'500'000);
  EXPECT_EQ(t.requests[1].tier, "small");
  EXPECT_EQ(t.requests[1].conversation, -1);
  EXPECT_EQ(t.requests[2].prompt[0].content_id, 255u);
  EXPECT_EQ(t.requests[2].prompt[1].content_id, 0xFFFFFFFFFFFFFFFFULL);
  EXPECT_EQ(t.requests[2].prompt_tokens, 7);
}

TEST(JsonlTrace, ErrorsNameFileLineAndField) {
  auto error_for = [](const std::string& name, const std::string& line) {
    const std::string path = write_temp(name, line);
    return trace_error_of([&] { read_trace_jsonl(path); }).substr(path.size());
  };
  EXPECT_EQ(error_for("e1.jsonl", "{\"prompt_tokens\": 5, \"output_tokens\": 1}\n"),
            ":1: timestamp_ms: missing field");
  EXPECT_EQ(error_for("e2.jsonl", "{\"timestamp_ms\": 0, \"output_tokens\": 1}\n"),
            ":1: prompt: missing field (give prompt segments or prompt_tokens)");
  EXPECT_EQ(error_for("e3.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt\": [{\"id\": 1, \"tokens\": 3}, {\"id\": 2, "
                      "\"tokens\": 0}], \"output_tokens\": 1}\n"),
            ":1: prompt[1].tokens: expected an integer >= 1, got 0");
  EXPECT_EQ(
      error_for("e4.jsonl",
                "{\"timestamp_ms\": 0, \"prompt\": [{\"tokens\": 3}], \"output_tokens\": 1}\n"),
      ":1: prompt[0].id: missing field");
  EXPECT_EQ(error_for("e5.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt\": [{\"id\": 1, \"tokens\": 3}], "
                      "\"prompt_tokens\": 4, \"output_tokens\": 1}\n"),
            ":1: prompt_tokens: is 4 but the prompt's segments hold 3 tokens");
  EXPECT_EQ(error_for("e6.jsonl", "{\"timestamp_ms\": 0, \"prompt_tokens\": 5}\n"),
            ":1: output_tokens: missing field");
  EXPECT_EQ(error_for("e6b.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt_tokens\": 5, \"output_tokens\": 1, "
                      "\"output_tokens\": 2}\n"),
            ":1: output_tokens: given twice in one JSON object");
  EXPECT_EQ(error_for("e7.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt_tokens\": 5, \"output_tokens\": 1.5}\n"),
            ":1: output_tokens: expected an integer, got number");
  EXPECT_EQ(error_for("e8.jsonl",
                      "{\"timestamp_ms\": 5, \"prompt_tokens\": 5, \"output_tokens\": 1}\n"
                      "{\"timestamp_ms\": 4, \"prompt_tokens\": 5, \"output_tokens\": 1}\n"),
            ":2: timestamp_ms: timestamps must not go back: 4 ms after 5 ms on an earlier line");
  EXPECT_EQ(error_for("e9.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt_tokens\": 5, \"output_tokens\": 1, "
                      "\"measured\": 1}\n"),
            ":1: measured: expected true or false, got 1");
  EXPECT_EQ(error_for("e10.jsonl", "[1, 2]\n"), ":1: <json>: expected a JSON object per line");
  // Sizes no replay could hold are refused on their line, not simulated for minutes.
  EXPECT_EQ(
      error_for("e11.jsonl",
                "{\"timestamp_ms\": 0, \"prompt_tokens\": 5, \"output_tokens\": 2000000000}\n"),
      ":1: output_tokens: expected a token count in [1, 10000000], got 2000000000");
  EXPECT_EQ(error_for("e12.jsonl",
                      "{\"timestamp_ms\": 2e12, \"prompt_tokens\": 5, \"output_tokens\": 1}\n"),
            ":1: timestamp_ms: expected ms from the trace's start in [0, 1e12] (~31.7 years), got "
            "2000000000000.0");
  EXPECT_EQ(error_for("e13.jsonl",
                      "{\"timestamp_ms\": 0, \"prompt\": [{\"id\": 1, \"tokens\": 9000000}, "
                      "{\"id\": 2, \"tokens\": 9000000}], \"output_tokens\": 1}\n"),
            ":1: prompt: the segments hold more than 10000000 tokens");
}

}  // namespace
}  // namespace fleetsim
