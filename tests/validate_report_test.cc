// The validation report's text and Markdown forms: every label whole, the columns aligned, and
// with several validation files a count per file beside the total, and the mean error of the
// relative figures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sstream>
#include <string>

#include "sim/fleet/validate.h"

namespace fleetsim {
namespace {

FigureCheck figure(const std::string& file, const std::string& label, bool ok) {
  FigureCheck f;
  f.file = file;
  f.label = label;
  f.arm = "vllm";
  f.metric = "ttft_p50_ms";
  f.measured = 100;
  f.simulated = ok ? 110 : 200;
  f.error = ok ? 0.1 : 1.0;
  f.tolerance = 0.3;
  f.relative = true;
  f.ok = ok;
  return f;
}

std::string line_with(const std::string& text, const std::string& needle) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(needle) != std::string::npos) return line;
  }
  return "";
}

TEST(ValidationReport, CountsEachFileAndKeepsLongLabelsWhole) {
  ValidationReport r;
  const std::string long_label = "a-scenario-with-a-long-name workload.max_requests=200";
  r.figures = {figure("validation/a.yaml", "short", true),
               figure("validation/a.yaml", long_label, false),
               figure("validation/b.yaml", "other", true)};
  std::ostringstream table;
  write_validation_table(table, r);
  const std::string t = table.str();
  // Beside each count, how far off the file's relative figures are on average (|0.1| and |1.0|).
  EXPECT_NE(t.find("  validation/a.yaml: 1 of 2, the 2 with a relative tolerance off by 55.00% "
                   "on average\n"
                   "  validation/b.yaml: 1 of 1, the 1 with a relative tolerance off by 10.00% "
                   "on average\n"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("2 of 3 figures inside their tolerance; the 3 with a relative tolerance off "
                   "by 40.00% on average"),
            std::string::npos)
      << t;
  // The long label is printed whole, and its arm sits under the header's "arm".
  const std::string row = line_with(t, long_label);
  ASSERT_FALSE(row.empty()) << t;
  EXPECT_EQ(row.find("vllm"), line_with(t, "check").find("arm")) << t;
  EXPECT_EQ(line_with(t, "short").find("vllm"), row.find("vllm")) << t;

  std::ostringstream md;
  write_validation_markdown(md, r, "fleetsim validate");
  EXPECT_NE(md.str().find("| validation/a.yaml | 1 | 2 | 55.00% (2) |\n"
                          "| validation/b.yaml | 1 | 1 | 10.00% (1) |"),
            std::string::npos)
      << md.str();
  const nlohmann::json j = validation_json(r);
  ASSERT_EQ(j["files"].size(), 2u);
  EXPECT_EQ(j["files"][0]["file"], "validation/a.yaml");
  EXPECT_EQ(j["files"][0]["inside"], 1);
  EXPECT_EQ(j["files"][0]["relative_figures"], 2);
  EXPECT_DOUBLE_EQ(j["files"][0]["mean_abs_error_pct"].get<double>(), 55.0);
}

TEST(ValidationReport, CountsEachGpuWhereTheChecksRanOnSeveral) {
  ValidationReport r;
  r.figures = {figure("validation/a.yaml", "x", true), figure("validation/a.yaml", "y", false),
               figure("validation/a.yaml", "z", true)};
  r.figures[0].gpu = "A100-80GB-SXM";
  r.figures[1].gpu = "H100-SXM";
  r.figures[2].gpu = "A100-80GB-SXM";
  std::ostringstream table;
  write_validation_table(table, r);
  EXPECT_NE(table.str().find("  on A100-80GB-SXM: 2 of 2, the 2 with a relative tolerance off by "
                             "10.00% on average\n"
                             "  on H100-SXM: 0 of 1, the 1 with a relative tolerance off by "
                             "100% on average\n"),
            std::string::npos)
      << table.str();
  std::ostringstream md;
  write_validation_markdown(md, r, "fleetsim validate");
  EXPECT_NE(md.str().find("| GPU | inside | figures | mean \\|error\\| of its relative figures |\n"
                          "|---|---|---|---|\n"
                          "| A100-80GB-SXM | 2 | 2 | 10.00% (2) |\n"
                          "| H100-SXM | 0 | 1 | 100% (1) |"),
            std::string::npos)
      << md.str();
  const nlohmann::json j = validation_json(r);
  ASSERT_EQ(j["gpus"].size(), 2u);
  EXPECT_EQ(j["gpus"][1]["gpu"], "H100-SXM");
  EXPECT_EQ(j["gpus"][1]["inside"], 0);
  EXPECT_EQ(j["figures"][1]["gpu"], "H100-SXM");
  // One GPU: no count per GPU in the table or the Markdown.
  for (auto& f : r.figures) f.gpu = "A100-80GB-SXM";
  std::ostringstream one;
  write_validation_table(one, r);
  EXPECT_EQ(one.str().find("  on A100"), std::string::npos) << one.str();
}

TEST(ValidationReport, ShapesAndAbsoluteFiguresStayOutOfTheMeanError) {
  ValidationReport r;
  FigureCheck absolute = figure("validation/a.yaml", "reuse", true);
  absolute.relative = false;
  absolute.error = 3.0;  // points, not a fraction
  FigureCheck shape = figure("validation/a.yaml", "curve", true);
  shape.rule = FigureCheck::Rule::kPeakAt;
  shape.error = 8.0;
  r.figures = {figure("validation/a.yaml", "ttft", true), absolute, shape};
  std::ostringstream table;
  write_validation_table(table, r);
  EXPECT_NE(table.str().find("3 of 3 figures inside their tolerance; the 1 with a relative "
                             "tolerance off by 10.00% on average"),
            std::string::npos)
      << table.str();
  r.figures = {absolute};
  std::ostringstream none;
  write_validation_table(none, r);
  EXPECT_NE(none.str().find("; none with a relative tolerance"), std::string::npos) << none.str();
}

TEST(ValidationReport, OneFileHasNoCountPerFile) {
  ValidationReport r;
  r.figures = {figure("validation/a.yaml", "short", true)};
  std::ostringstream table;
  write_validation_table(table, r);
  EXPECT_EQ(table.str().find("validation/a.yaml:"), std::string::npos) << table.str();
  std::ostringstream md;
  write_validation_markdown(md, r, "fleetsim validate");
  EXPECT_EQ(md.str().find("| validation file |"), std::string::npos) << md.str();
}

}  // namespace
}  // namespace fleetsim
