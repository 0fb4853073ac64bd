#include "models/trace_mooncake.h"

#include <gtest/gtest.h>

#include <numeric>

#include "models/block_hash.h"
#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

using testing::trace_error_of;
using testing::write_temp;

// Two requests sharing their first two 512-token blocks (ids 0, 1), then diverging.
const char* kTwo =
    "{\"timestamp\": 0, \"input_length\": 1300, \"output_length\": 7, \"hash_ids\": [0, 1, 2]}\n"
    "{\"timestamp\": 250, \"input_length\": 1100, \"output_length\": 3, \"hash_ids\": [0, 1, 5]}\n";

TEST(MooncakeTrace, BuildsOneSegmentPerBlockWithAShortLastBlock) {
  const Trace t = read_mooncake_trace(write_temp("two.jsonl", kTwo));
  ASSERT_EQ(t.requests.size(), 2u);
  const Request& a = t.requests[0];
  ASSERT_EQ(a.prompt.size(), 3u);
  EXPECT_EQ(a.prompt[0].tokens, 512);
  EXPECT_EQ(a.prompt[1].tokens, 512);
  EXPECT_EQ(a.prompt[2].tokens, 1300 - 1024);
  EXPECT_EQ(a.prompt_tokens, 1300);
  EXPECT_EQ(a.output_tokens, 7);
  EXPECT_EQ(a.arrival, 0);
  const Request& b = t.requests[1];
  EXPECT_EQ(b.arrival, 250 * kNsPerMs);
  EXPECT_EQ(b.prompt[2].tokens, 1100 - 1024);
  // Equal ids, equal content; different ids, different content; outputs unique.
  EXPECT_EQ(a.prompt[0].content_id, b.prompt[0].content_id);
  EXPECT_EQ(a.prompt[1].content_id, b.prompt[1].content_id);
  EXPECT_NE(a.prompt[2].content_id, b.prompt[2].content_id);
  EXPECT_NE(a.prompt[0].content_id, a.prompt[1].content_id);
  EXPECT_NE(a.output_content_id, b.output_content_id);
  EXPECT_EQ(t.skipped_lines, 0);
}

TEST(MooncakeTrace, EngineBlocksMatchExactlyOverTheSharedIds) {
  const Trace t = read_mooncake_trace(write_temp("two.jsonl", kTwo));
  const auto ha = hash_blocks(t.requests[0].prompt, 16);
  const auto hb = hash_blocks(t.requests[1].prompt, 16);
  ASSERT_EQ(ha.size(), 1300u / 16);
  ASSERT_EQ(hb.size(), 1100u / 16);
  // 2 shared blocks of 512 = 64 blocks of 16 match, and not one more.
  std::size_t common = 0;
  while (common < hb.size() && ha[common] == hb[common]) ++common;
  EXPECT_EQ(common, 64u);
}

TEST(MooncakeTrace, FewerIdsThanBlocksLeaveAUniqueTail) {
  const Trace t = read_mooncake_trace(write_temp(
      "short.jsonl",
      "{\"timestamp\": 0, \"input_length\": 1300, \"output_length\": 1, \"hash_ids\": [4]}\n"));
  ASSERT_EQ(t.requests[0].prompt.size(), 2u);
  EXPECT_EQ(t.requests[0].prompt[0].tokens, 512);
  EXPECT_EQ(t.requests[0].prompt[1].tokens, 788);
}

TEST(MooncakeTrace, ErrorsNameFileLineAndField) {
  const std::string path = write_temp(
      "bad.jsonl",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, 1]}\n"
      "{\"timestamp\": 5, \"output_length\": 1, \"hash_ids\": [0]}\n");
  EXPECT_EQ(trace_error_of([&] { read_mooncake_trace(path); }),
            path + ":2: input_length: missing field");

  const std::string typed = write_temp("typed.jsonl",
                                       "{\"timestamp\": \"soon\", \"input_length\": 600, "
                                       "\"output_length\": 1, \"hash_ids\": [0]}\n");
  EXPECT_EQ(trace_error_of([&] { read_mooncake_trace(typed); }),
            typed + ":1: timestamp: expected a number, got a string 'soon'");

  const std::string ids = write_temp(
      "ids.jsonl",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, -1]}\n");
  EXPECT_NE(trace_error_of([&] { read_mooncake_trace(ids); }).find(ids + ":1: hash_ids[1]: "),
            std::string::npos);

  const std::string many = write_temp(
      "many.jsonl",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [0, 1, 2]}\n");
  EXPECT_EQ(trace_error_of([&] { read_mooncake_trace(many); }),
            many + ":1: hash_ids: 3 ids for input_length 600 (at most 2 blocks of 512)");

  const std::string back = write_temp(
      "back.jsonl",
      "{\"timestamp\": 10, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 9, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [1]}\n");
  EXPECT_EQ(
      trace_error_of([&] { read_mooncake_trace(back); }),
      back + ":2: timestamp: timestamps must not go back: 9 ms after 10 ms on an earlier line");
}

TEST(MooncakeTrace, TruncatedLastLineAndEmptyFile) {
  const std::string cut = write_temp(
      "cut.jsonl",
      "{\"timestamp\": 0, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 3, \"input_length\": 6, \"outp");
  const std::string msg = trace_error_of([&] { read_mooncake_trace(cut); });
  EXPECT_EQ(msg.rfind(cut + ":2: <json>: invalid JSON", 0), 0u) << msg;
  EXPECT_NE(msg.find("truncated last line"), std::string::npos) << msg;

  const std::string empty = write_temp("empty.jsonl", "");
  EXPECT_EQ(trace_error_of([&] { read_mooncake_trace(empty); }),
            empty + ": empty trace: no requests");
  const std::string blank = write_temp("blank.jsonl", "\n  \n");
  EXPECT_EQ(trace_error_of([&] { read_mooncake_trace(blank); }),
            blank + ": empty trace: no requests");
}

TEST(MooncakeTrace, SkipBadLinesCountsThem) {
  const std::string path = write_temp(
      "mixed.jsonl",
      "{\"timestamp\": 0, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "not json\n"
      "{\"timestamp\": 2, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 1, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [2]}\n"
      "{\"timestamp\": 3, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [3]}\n"
      "{\"timestamp\": 4, \"input_le");
  MooncakeOptions o;
  o.skip_bad_lines = true;
  const Trace t = read_mooncake_trace(path, o);
  EXPECT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.skipped_lines, 3);
  EXPECT_EQ(t.lines_read, 6);
  EXPECT_EQ(t.first_skipped.rfind(path + ":2: <json>: invalid JSON", 0), 0u) << t.first_skipped;
  EXPECT_EQ(t.requests[2].arrival, 3 * kNsPerMs);

  const std::string all_bad = write_temp("allbad.jsonl", "x\ny\n");
  EXPECT_NE(trace_error_of([&] {
              read_mooncake_trace(all_bad, o);
            }).find(all_bad + ": no valid requests; all 2 lines were bad"),
            std::string::npos);
}

TEST(MooncakeTrace, ReadsTheSyntheticTrace) {
  const Trace t = read_mooncake_trace(testing::shared_path("data/mooncake/synthetic_trace.jsonl"));
  // ../shared/data/README.md: 3,993 requests, average input 15,325 tokens.
  ASSERT_EQ(t.requests.size(), 3993u);
  std::int64_t input = 0;
  for (const Request& r : t.requests) {
    input += r.prompt_tokens;
    ASSERT_EQ(r.prompt_tokens, total_tokens(r.prompt));
  }
  EXPECT_EQ(input, 61194628);  // 15,325.48 x 3,993
  EXPECT_EQ(t.requests.back().arrival, 1022025 * kNsPerMs);
}

}  // namespace
}  // namespace fleetsim
