#include "models/calibration.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(CalibrationCsv, BatchEntries) {
  const auto b = parse_batch("512:0; 3x1:2000;7");
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].new_tokens, 512);
  EXPECT_EQ(b[0].context_tokens, 0);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(b[i].new_tokens, 1);
    EXPECT_EQ(b[i].context_tokens, 2000);
  }
  EXPECT_EQ(b[4].new_tokens, 7);
  EXPECT_EQ(b[4].context_tokens, 0);
  for (const char* bad : {"", "0:5", "abc", "1:-3", "0x1:5", "2x:5", "1:2:3", "1.5:2"}) {
    EXPECT_THROW(parse_batch(bad), std::invalid_argument) << bad;
  }
}

TEST(CalibrationCsv, StepRowsWithCommentsQuotesAndExtraColumns) {
  const Measurements m = parse_measurements(
      "# measured on my A100\r\n"
      "time_s,step_ms,batch\r\n"
      "0.1,12.5,\"1:100;1:200\"\r\n"
      "\n"
      "0.2, 80 ,2048\n",
      "m.csv");
  EXPECT_EQ(m.layout, "steps");
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(m.steps[0].step_ms, 12.5);
  EXPECT_EQ(m.steps[0].batch.size(), 2u);
  EXPECT_EQ(m.steps[0].line, 3);
  EXPECT_EQ(m.steps[1].batch[0].new_tokens, 2048);
  EXPECT_EQ(m.steps[1].line, 5);
  EXPECT_EQ(m.ignored_columns, std::vector<std::string>{"time_s"});
}

TEST(CalibrationCsv, RequestRowsBecomeAPrefillAndAMeanDecode) {
  const Measurements m = parse_measurements(
      "prompt_tokens,cached_tokens,ttft_ms,tpot_ms,output_tokens\n"
      "1000,200,90.5,12.25,101\n"
      "500,,40,,\n"
      "300,0,,11,2\n",
      "r.csv");
  EXPECT_EQ(m.layout, "requests");
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.steps[0].origin, "ttft");
  EXPECT_EQ(m.steps[0].batch[0].new_tokens, 800);
  EXPECT_EQ(m.steps[0].batch[0].context_tokens, 200);
  EXPECT_DOUBLE_EQ(m.steps[0].step_ms, 90.5);
  // Decode steps k = 1..100 read 1000 + k - 1 context tokens: 1049.5 on average.
  EXPECT_EQ(m.steps[1].origin, "tpot");
  EXPECT_EQ(m.steps[1].batch[0].new_tokens, 1);
  EXPECT_EQ(m.steps[1].batch[0].context_tokens, 1050);
  EXPECT_EQ(m.steps[2].batch[0].new_tokens, 500);
  EXPECT_EQ(m.steps[3].batch[0].context_tokens, 300);
}

std::string csv_error(const std::string& text) {
  try {
    parse_measurements(text, "m.csv");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationCsv, BadInputNamesFileLineColumnAndExpectation) {
  EXPECT_EQ(csv_error("step_ms,batch\n1,1:2\nabc,1:2\n"),
            "m.csv:3: column 'step_ms': expected a step duration in ms, a number > 0, got 'abc'");
  EXPECT_EQ(csv_error("step_ms,batch\n-4,1:2\n"),
            "m.csv:2: column 'step_ms': expected a step duration in ms, a number > 0, got '-4'");
  EXPECT_NE(csv_error("step_ms,batch\n4,1:x\n").find("m.csv:2: column 'batch': entry '1:x'"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n4,\n").find("m.csv:2: column 'batch': expected the step's"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms\n4\n").find("m.csv:1: missing column 'batch'"), std::string::npos);
  EXPECT_NE(csv_error("time,tokens\n4,5\n").find("m.csv:1: missing column(s) step_ms, batch"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n4,1:2,7\n").find("m.csv:2: expected 2 cells"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n\"4,1:2\n").find("m.csv:2: a double quote is not closed"),
            std::string::npos);
  EXPECT_NE(csv_error("# nothing\n").find("m.csv: empty measurements file"), std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n").find("no measurements"), std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,tpot_ms\n5,3\n").find("missing column 'output_tokens'"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,cached_tokens,ttft_ms\n5,5,3\n")
                .find("m.csv:2: column 'cached_tokens': expected an integer in [0, "
                      "prompt_tokens - 1] = [0, 4], got '5'"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,ttft_ms,tpot_ms,output_tokens\n5,,,\n")
                .find("a row needs ttft_ms or tpot_ms"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,tpot_ms,output_tokens\n5,3,1\n")
                .find("column 'output_tokens': expected the output length in tokens, an integer "
                      ">= 2, got '1'"),
            std::string::npos);
  EXPECT_EQ(csv_error("step_ms,batch,batch\n4,1:2,1:3\n"),
            "m.csv:1: column 'batch' given twice; give each column once");
  EXPECT_THROW(read_measurements("/no/such/measurements.csv"), TraceError);
  try {
    read_measurements("/tmp");
    ADD_FAILURE() << "a directory was read as measurements";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("/tmp: is a directory"), std::string::npos);
  }
}

}  // namespace
}  // namespace fleetsim
