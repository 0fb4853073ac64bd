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
  // Years beyond what 64-bit nanoseconds hold are refused, not wrapped (found by fuzzing).
  EXPECT_EQ(parse_datetime_ns("2262-04-10 00:00:00"), 9'223'200'000'000'000'000);
  EXPECT_THROW(parse_datetime_ns("9999-12-31 23:59:59"), TraceLineError);
  EXPECT_THROW(parse_datetime_ns("1000-01-01 00:00:00"), TraceLineError);
  for (const char* bad : {"2023-11-16", "2023-13-01 00:00:00", "2023-11-16 18:15:46.", "yesterday",
                          "2023-11-16 18:15:46x"}) {
    EXPECT_THROW(parse_datetime_ns(bad), TraceLineError) << bad;
  }
}

TEST(AzureTrace, ZonesAreTakenToUtc) {
  // The 2024 week-long traces write "+00:00"; Python's datetime.fromisoformat agrees on the rest.
  const std::int64_t utc = parse_datetime_ns("2024-05-10 00:00:00.009930");
  EXPECT_EQ(parse_datetime_ns("2024-05-10 00:00:00.009930+00:00"), utc);
  EXPECT_EQ(parse_datetime_ns("2024-05-10 00:00:00.009930Z"), utc);
  const std::int64_t hour = 3600 * kNsPerSec;
  EXPECT_EQ(parse_datetime_ns("2024-05-10 02:00:00.009930+02:00"), utc);
  EXPECT_EQ(parse_datetime_ns("2024-05-09 19:30:00.009930-04:30"), utc);
  EXPECT_EQ(parse_datetime_ns("2024-05-10 05:30:00.009930+0530"), utc);
  EXPECT_EQ(parse_datetime_ns("2024-05-10 01:00:00.009930+01"), utc);
  EXPECT_EQ(parse_datetime_ns("2024-05-10T01:00:00+01:00"), utc - 9'930'000);
  EXPECT_EQ(parse_datetime_ns("2024-05-10 00:00:00.009930-01:00"), utc + hour);
  for (const char* bad :
       {"2024-05-10 00:00:00+5:00", "2024-05-10 00:00:00+05:", "2024-05-10 00:00:00+24:00",
        "2024-05-10 00:00:00+05:60", "2024-05-10 00:00:00+05:3", "2024-05-10 00:00:00+",
        "2024-05-10 00:00:00Z+01:00", "2024-05-10 00:00:00+01:00:00"}) {
    EXPECT_THROW(parse_datetime_ns(bad), TraceLineError) << bad;
  }
}

TEST(AzureTrace, ClockChangesKeepTheOrder) {
  // The night the clocks go back: 02:15 in winter time (+01:00) comes 45 minutes after 02:30 in
  // summer time (+02:00), though its wall clock reads earlier.
  const Trace t = read_azure_trace(write_temp("dst.csv",
                                              "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                              "2024-10-27 02:30:00+02:00,10,1\n"
                                              "2024-10-27 02:15:00+01:00,10,1\n"));
  ASSERT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(t.requests[1].arrival, 2700 * kNsPerSec);
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
            zero + ":2: GeneratedTokens: expected an integer in [1, 10000000], got 0");
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

std::string every_second(int rows, const std::string& tail = "") {
  std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < rows; ++i) {
    csv += "2024-05-10 00:00:" + std::string(i < 10 ? "0" : "") + std::to_string(i) + "+00:00," +
           std::to_string(100 + i) + ",5\n";
  }
  return csv + tail;
}

TEST(AzureTrace, ReadsOnlyTheWindowAndStopsAfterIt) {
  TraceReadOptions o;
  o.window_start = 2 * kNsPerSec;
  o.window_end = 5 * kNsPerSec;
  // The line after the window is garbage: reading stops before it.
  const Trace t = read_azure_trace(write_temp("w.csv", every_second(8, "garbage\n")), o);
  ASSERT_EQ(t.requests.size(), 3u);
  // Offsets stay from the trace's first line, which is left out of the window.
  EXPECT_EQ(t.requests[0].arrival, 2 * kNsPerSec);
  EXPECT_EQ(t.requests[0].prompt_tokens, 102);
  EXPECT_EQ(t.requests[2].prompt_tokens, 104);
  EXPECT_EQ(t.left_out, 3);  // two before it, and the first past it, where reading stopped
  // A cap stops it too; a window past the trace's end leaves nothing, and no error here: the
  // replay names the window (sim/fleet/workloads).
  o.window_end = 0;
  o.max_in_window = 2;
  EXPECT_EQ(read_azure_trace(write_temp("c.csv", every_second(8, "garbage\n")), o).requests.size(),
            2u);
  o.max_in_window = 0;
  o.window_start = 60 * kNsPerSec;
  const Trace past = read_azure_trace(write_temp("p.csv", every_second(8)), o);
  EXPECT_TRUE(past.requests.empty());
  EXPECT_EQ(past.left_out, 8);
  // Without a window the garbage is read and reported.
  EXPECT_NE(trace_error_of([&] {
              read_azure_trace(write_temp("g.csv", every_second(8, "garbage\n")));
            }).find("g.csv:10: "),
            std::string::npos);
}

TEST(AzureTrace, AReadWindowReplaysAsTheWholeTraceDoes) {
  const std::string path = testing::shared_path("data/azure2023/AzureLLMInferenceTrace_conv.csv");
  const Trace whole = read_azure_trace(path);
  for (const std::int64_t cap : {0, 300, 100000}) {
    ReplayOptions replay;
    replay.start_s = 600;
    replay.end_s = 1200;
    replay.time_scale = 0.5;
    replay.loop = 2;
    replay.max_requests = cap;
    TraceReadOptions read;
    read.window_start = sec_to_ns(replay.start_s);
    read.window_end = sec_to_ns(replay.end_s);
    read.max_in_window = cap;
    const Trace windowed = read_azure_trace(path, read);
    EXPECT_LT(windowed.requests.size(), whole.requests.size() / 4);
    const std::vector<Request> a = apply_replay(whole.requests, replay);
    const std::vector<Request> b = apply_replay(windowed.requests, replay);
    ASSERT_EQ(a.size(), b.size()) << cap;
    ASSERT_FALSE(a.empty());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].arrival, b[i].arrival) << cap << " " << i;
      EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
      EXPECT_EQ(a[i].prompt[0].content_id, b[i].prompt[0].content_id);
    }
  }
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
