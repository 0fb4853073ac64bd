// The `empirical` length distribution (sim/distribution.cc): draws a column of a CSV file.
#include <gtest/gtest.h>

#include <yaml-cpp/yaml.h>
#include <filesystem>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "models/trace_test_util.h"
#include "sim/distribution.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

const std::string kLengths = "data/lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv";

DistributionPtr parse(const std::string& yaml) {
  return parse_distribution(YAML::Load(yaml), YamlWhere{"s.yaml", "workload.prompt_tokens"});
}

std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ScenarioError for " << yaml;
  return "";
}

using testing::write_temp;

TEST(Empirical, DrawsTheColumnsValues) {
  const std::string path = write_temp("lengths.csv", "a,b\n1,10\n2,20\n 3 ,30\n\n");
  const DistributionPtr d = parse("{dist: empirical, file: '" + path + "', column: b}");
  EXPECT_DOUBLE_EQ(d->mean(), 20);
  Rng rng(3);
  std::set<double> seen;
  for (int i = 0; i < 200; ++i) seen.insert(d->sample(rng));
  EXPECT_EQ(seen, (std::set<double>{10, 20, 30}));
  const DistributionPtr clamped =
      parse("{dist: empirical, file: '" + path + "', column: a, max: 2}");
  EXPECT_DOUBLE_EQ(clamped->mean(), 5.0 / 3);
}

TEST(Empirical, ShareGptPromptLengths) {
  const std::string file = std::string(FLEETSIM_SHARED_DIR) + "/" + kLengths;
  // The mean of the column, computed here independently of the distribution's reader.
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  double sum = 0;
  int n = 0;
  while (std::getline(in, line)) {
    sum += std::stod(line.substr(0, line.find(',')));
    ++n;
  }
  ASSERT_EQ(n, 30731);
  const DistributionPtr d = parse("{dist: empirical, file: '" + file + "'}");  // num_prefill_tokens
  EXPECT_NEAR(d->mean(), sum / n, 1e-9);
  // Relative to $FLEETSIM_DATA_DIR.
  ::setenv("FLEETSIM_DATA_DIR", (std::string(FLEETSIM_SHARED_DIR) + "/data").c_str(), 1);
  const DistributionPtr rel = parse(
      "{dist: empirical, file: lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv, "
      "column: num_decode_tokens}");
  ::unsetenv("FLEETSIM_DATA_DIR");
  EXPECT_GT(rel->mean(), 0);
}

TEST(Empirical, ErrorsNameTheFileLineAndField) {
  EXPECT_EQ(error_of("{dist: empirical, file: no/such.csv}"),
            "s.yaml:1: workload.prompt_tokens.file: cannot open the CSV file 'no/such.csv' "
            "(looked in the current directory, then the data folder " +
                (std::filesystem::path(FLEETSIM_SHARED_DIR) / "data").lexically_normal().string() +
                "/); expected a CSV file with a header row (docs/workloads.md)");
  const std::string path = write_temp("bad.csv", "a,b\n1,10\n2,x\n");
  EXPECT_EQ(
      error_of("{dist: empirical, file: '" + path + "', column: c}"),
      "s.yaml:1: workload.prompt_tokens.column: " + path + ":1: no column 'c'; columns: a, b");
  EXPECT_EQ(error_of("{dist: empirical, file: '" + path + "', column: b}"),
            path + ":3: b: expected a number, got 'x' (s.yaml:1: workload.prompt_tokens.file)");
  const std::string empty = write_temp("empty.csv", "a,b\n");
  EXPECT_EQ(error_of("{dist: empirical, file: '" + empty + "', column: b}"),
            "s.yaml:1: workload.prompt_tokens.file: " + empty + ": no data rows under the header");
}

}  // namespace
}  // namespace fleetsim
