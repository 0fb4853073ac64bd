#include "models/trace_burstgpt.h"

#include <gtest/gtest.h>

#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

using testing::trace_error_of;
using testing::write_temp;

// The README's own example rows, a failed request (0 response tokens) and an API-log row.
const char* const kRows =
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,230,1317,Conversation log\n"
    "60.5,ChatGPT,300,0,300,Conversation log\n"
    "118,GPT-4,417,276,693,Conversation log\n"
    "120,ChatGPT,50,20,70,API log\n";

TEST(BurstGptTrace, SecondsFromTheStartLengthsAndNoSharedContent) {
  const Trace t = read_burstgpt_trace(write_temp("b.csv", kRows));
  ASSERT_EQ(t.requests.size(), 4u);  // the failed row is left out
  EXPECT_EQ(t.left_out, 1);
  EXPECT_EQ(t.requests[0].arrival, 5 * kNsPerSec);
  EXPECT_EQ(t.requests[1].arrival, 45 * kNsPerSec);
  EXPECT_EQ(t.requests[2].arrival, 118 * kNsPerSec);
  EXPECT_EQ(t.requests[1].prompt_tokens, 1087);
  EXPECT_EQ(t.requests[1].output_tokens, 230);
  ASSERT_EQ(t.requests[0].prompt.size(), 1u);
  EXPECT_NE(t.requests[0].prompt[0].content_id, t.requests[1].prompt[0].content_id);
  EXPECT_TRUE(t.requests[0].session.empty());
}

TEST(BurstGptTrace, FiltersByModelAndLogType) {
  BurstGptOptions o;
  o.model = "GPT-4";
  const Trace gpt4 = read_burstgpt_trace(write_temp("m.csv", kRows), o);
  ASSERT_EQ(gpt4.requests.size(), 1u);
  EXPECT_EQ(gpt4.requests[0].prompt_tokens, 417);
  EXPECT_EQ(gpt4.left_out, 4);
  o.model = "ChatGPT";
  o.log_type = "API log";
  const Trace api = read_burstgpt_trace(write_temp("l.csv", kRows), o);
  ASSERT_EQ(api.requests.size(), 1u);
  EXPECT_EQ(api.requests[0].arrival, 120 * kNsPerSec);
  // A filter nothing matches leaves no request, for the replay to report with its options.
  o.model = "GPT-5";
  EXPECT_TRUE(read_burstgpt_trace(write_temp("none.csv", kRows), o).requests.empty());
}

TEST(BurstGptTrace, FailedRowsCanBeErrors) {
  BurstGptOptions o;
  o.failed_is_error = true;
  const std::string path = write_temp("f.csv", kRows);
  EXPECT_EQ(trace_error_of([&] { read_burstgpt_trace(path, o); }),
            path +
                ":4: Response tokens: 0 response tokens: a request that failed (BurstGPT's "
                "mark); failed_rows: skip leaves such rows out");
}

TEST(BurstGptTrace, ASessionColumnBecomesTheSession) {
  const Trace t = read_burstgpt_trace(
      write_temp("s.csv",
                 "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type,SessionID\n"
                 "0,ChatGPT,10,5,15,Conversation log,abc\n1,ChatGPT,20,5,25,Conversation log,\n"));
  ASSERT_EQ(t.requests.size(), 2u);
  EXPECT_EQ(t.requests[0].session, "abc");
  EXPECT_TRUE(t.requests[1].session.empty());
}

TEST(BurstGptTrace, ErrorsNameFileLineAndField) {
  const std::string header = write_temp("h.csv", "Timestamp,Model,Request tokens,Log Type\n");
  EXPECT_EQ(trace_error_of([&] { read_burstgpt_trace(header); }),
            header +
                ":1: Response tokens: missing column in the header (expected Timestamp, Model, "
                "Request tokens, Response tokens, Log Type; found Timestamp, Model, Request "
                "tokens, Log Type)");
  const std::string head = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";
  const std::string time = write_temp("t.csv", head + "soon,ChatGPT,1,1,2,API log\n");
  EXPECT_EQ(
      trace_error_of([&] { read_burstgpt_trace(time); }),
      time + ":2: Timestamp: expected seconds from the trace's start in [0, 1e9], got 'soon'");
  const std::string back =
      write_temp("o.csv", head + "9,ChatGPT,1,1,2,API log\n8,ChatGPT,1,1,2,API log\n");
  EXPECT_NE(trace_error_of([&] {
              read_burstgpt_trace(back);
            }).find(":3: Timestamp: timestamps must not go back"),
            std::string::npos);
  const std::string zero = write_temp("z.csv", head + "9,ChatGPT,0,1,1,API log\n");
  EXPECT_EQ(trace_error_of([&] { read_burstgpt_trace(zero); }),
            zero + ":2: Request tokens: expected an integer in [1, 10000000], got 0");
  const std::string cols = write_temp("c.csv", head + "9,ChatGPT,1,1\n");
  EXPECT_EQ(trace_error_of([&] { read_burstgpt_trace(cols); }),
            cols + ":2: Log Type: expected 6 columns, got 4");
  const std::string wide = write_temp("w.csv", head + "9,ChatGPT,1,1,2,API log,x\n");
  EXPECT_EQ(trace_error_of([&] { read_burstgpt_trace(wide); }),
            wide + ":2: <csv>: expected 6 columns, got 7");
}

TEST(BurstGptTrace, ReadingStopsAtTheWindowEvenOnFilteredRows) {
  BurstGptOptions o;
  o.model = "GPT-4";
  o.window_end = 100 * kNsPerSec;
  // The GPT-4 row at 118 s is past the window; so is the garbage after it, never read.
  const Trace t = read_burstgpt_trace(write_temp("w.csv", std::string(kRows) + "garbage\n"), o);
  EXPECT_TRUE(t.requests.empty());
  EXPECT_EQ(t.left_out, 4);
  // A window that ends before the first row: nothing kept, no error here (the replay names the
  // window), since the row was good.
  BurstGptOptions early;
  early.window_end = 2 * kNsPerSec;
  const Trace none = read_burstgpt_trace(write_temp("e.csv", kRows), early);
  EXPECT_TRUE(none.requests.empty());
  EXPECT_EQ(none.left_out, 1);
}

}  // namespace
}  // namespace fleetsim
