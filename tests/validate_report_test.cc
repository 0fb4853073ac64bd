// The validation report's text and Markdown forms: every label whole, the columns aligned, and
// with several validation files a count per file beside the total.
#include <gtest/gtest.h>

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
  EXPECT_NE(t.find("  validation/a.yaml: 1 of 2\n  validation/b.yaml: 1 of 1\n"), std::string::npos)
      << t;
  EXPECT_NE(t.find("2 of 3 figures inside their tolerance"), std::string::npos) << t;
  // The long label is printed whole, and its arm sits under the header's "arm".
  const std::string row = line_with(t, long_label);
  ASSERT_FALSE(row.empty()) << t;
  EXPECT_EQ(row.find("vllm"), line_with(t, "check").find("arm")) << t;
  EXPECT_EQ(line_with(t, "short").find("vllm"), row.find("vllm")) << t;

  std::ostringstream md;
  write_validation_markdown(md, r, "fleetsim validate");
  EXPECT_NE(md.str().find("| validation/a.yaml | 1 | 2 |\n| validation/b.yaml | 1 | 1 |"),
            std::string::npos)
      << md.str();
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
