#include "models/trace_azure.h"

#include <gtest/gtest.h>

#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

using testing::trace_error_of;
using testing::write_temp;

TEST(AzureTrace, ParsesDatetimes) {
  EXPECT_EQ(parse_datetime_ns("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(parse_datetime_ns("1970-01-01 00:00:01.5"), 1'500'000'000);
  EXPECT_EQ(parse_datetime_ns("1970-01-02T00:00:00Z"), 86'400'000'000'000);
  // datetime(2023, 11, 16, 18, 15, 46, 680590, tzinfo=utc).timestamp() in Python.
  EXPECT_EQ(parse_datetime_ns("2023-11-16 18:15:46.6805900"), 1'700'158'546'680'590'000);
  EXPECT_EQ(parse_datetime_ns("2024-02-29 12:00:00.000000001"), 1'709'208'000'000'000'001);
  for (const char* bad : {"2023-11-16", "2023-13-01 00:00:00", "2023-11-16 18:15:46.", "yesterday",
                          "2023-11-16 18:15:46x"}) {
    EXPECT_THROW(parse_datetime_ns(bad), TraceLineError) << bad;
  }
}

TEST(AzureTrace, OffsetsFromTheFirstRequestAndUniqueContent) {
  const Trace t = read_azure_trace(write_temp("a.csv",
                                              "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                              "2023-11-16 18:15:46.6805900,374,44\n"
                                              "2023-11-16 18:15:50.9951690,396,109\r\n"
                                              "2023-11-16 18:15:50.9951690,374,1\n"));
  ASSERT_EQ(t.requests.size(), 3u);
  EXPECT_EQ(t.requests[0].arrival, 0);
  EXPECT_EQ(t.requests[1].arrival, 4'314'579'000);
  EXPECT_EQ(t.requests[2].arrival, 4'314'579'000);
  EXPECT_EQ(t.requests[1].prompt_tokens, 396);
  EXPECT_EQ(t.requests[1].output_tokens, 109);
  ASSERT_EQ(t.requests[2].prompt.size(), 1u);
  EXPECT_EQ(t.requests[2].prompt[0].tokens, 374);
  // Equal lengths, still different content: the trace has no prefix data.
  EXPECT_NE(t.requests[0].prompt[0].content_id, t.requests[2].prompt[0].content_id);
}

TEST(AzureTrace, ColumnsByNameInAnyOrder) {
  const Trace t = read_azure_trace(
      write_temp("b.csv", "GeneratedTokens,TIMESTAMP,ContextTokens\n7,2023-11-16 18:15:46,100\n"));
  EXPECT_EQ(t.requests[0].prompt_tokens, 100);
  EXPECT_EQ(t.requests[0].output_tokens, 7);
}

TEST(AzureTrace, ErrorsNameFileLineAndField) {
  const std::string header = write_temp("h.csv", "TIMESTAMP,Context,GeneratedTokens\n");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(header); }),
            header +
                ":1: ContextTokens: missing column in the header (expected TIMESTAMP, "
                "ContextTokens, GeneratedTokens; found TIMESTAMP, Context, GeneratedTokens)");
  const std::string num = write_temp("n.csv",
                                     "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                     "2023-11-16 18:15:46,100,7\n"
                                     "2023-11-16 18:15:47,12x,7\n");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(num); }),
            num + ":3: ContextTokens: expected an integer, got '12x'");
  const std::string zero = write_temp("z.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46,100,0\n");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(zero); }),
            zero + ":2: GeneratedTokens: expected an integer in [1, 1e9], got 0");
  const std::string back = write_temp("back.csv",
                                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                      "2023-11-16 18:15:46,100,7\n"
                                      "2023-11-16 18:15:45,100,7\n");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(back); }),
            back +
                ":3: TIMESTAMP: timestamps must not go back: 2023-11-16 18:15:45 is earlier "
                "than an earlier line's");
  const std::string cut = write_temp("cut.csv",
                                     "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                     "2023-11-16 18:15:46,100,7\n"
                                     "2023-11-16 18:15:47,10");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(cut); }),
            cut +
                ":3: GeneratedTokens: expected 3 columns, got 2 (truncated last line: no line "
                "break at the end of the file)");
  const std::string empty = write_temp("e.csv", "");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(empty); }), empty + ": empty trace: no requests");
  const std::string only = write_temp("o.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n");
  EXPECT_EQ(trace_error_of([&] { read_azure_trace(only); }), only + ": empty trace: no requests");
}

TEST(AzureTrace, SkipBadLinesButNeverABadHeader) {
  TraceReadOptions o;
  o.skip_bad_lines = true;
  const Trace t = read_azure_trace(write_temp("s.csv",
                                              "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                              "2023-11-16 18:15:46,100,7\n"
                                              "garbage\n"
                                              "2023-11-16 18:15:48,100,7\n"
                                              "2023-11-16 18:15:47,100,7\n"),
                                   o);
  EXPECT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(t.skipped_lines, 2);
  EXPECT_EQ(t.requests[1].arrival, 2 * kNsPerSec);
  const std::string header = write_temp("h2.csv", "a,b,c\n1,2,3\n");
  EXPECT_NE(trace_error_of([&] { read_azure_trace(header, o); }).find("missing column"),
            std::string::npos);
}

TEST(AzureTrace, ReadsTheConversationTrace) {
  const Trace t =
      read_azure_trace(testing::shared_path("data/azure2023/AzureLLMInferenceTrace_conv.csv"));
  ASSERT_EQ(t.requests.size(), 19366u);
  // 19:14:08.4025270 - 18:15:46.6805900
  EXPECT_EQ(t.requests.back().arrival, 3'501'721'937'000);
  EXPECT_EQ(t.requests.back().prompt_tokens, 197);
  EXPECT_EQ(t.requests.back().output_tokens, 183);
}

}  // namespace
}  // namespace fleetsim
