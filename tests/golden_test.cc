// The flagship scenario's JSON result is compared byte for byte with a committed golden file.
// After an intended change, regenerate it with scripts/regen-golden.sh and review the diff.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Golden, FlagshipJsonMatches) {
  const std::string name = "loxilb-3pod-long";
  const Scenario s = load_scenario(testing::source_path("scenarios/" + name + ".yaml"));
  const std::string got = result_json(run_scenario(s, 0), s).dump(2) + "\n";
  const std::string want = read(testing::source_path("tests/golden/" + name + ".json"));
  ASSERT_FALSE(want.empty()) << "missing golden file; run scripts/regen-golden.sh";
  EXPECT_EQ(got, want) << "flagship result changed; if intended, run scripts/regen-golden.sh";
}

TEST(Golden, FlagshipReproducesMeasuredReuseOrdering) {
  const Scenario s = load_scenario(testing::source_path("scenarios/loxilb-3pod-long.yaml"));
  const RunResult r = run_scenario(s, 0);
  ASSERT_EQ(r.arms.size(), 3u);
  const double epp = r.arms[0].summary.prefix_cache_reuse;
  const double chwbl = r.arms[1].summary.prefix_cache_reuse;
  const double rr = r.arms[2].summary.prefix_cache_reuse;
  EXPECT_GE(epp, chwbl);
  EXPECT_GT(chwbl, rr);
  EXPECT_NEAR(epp, 0.933, 0.05);
  EXPECT_NEAR(chwbl, 0.906, 0.05);
  for (const auto& a : r.arms) EXPECT_EQ(a.summary.failed, 0) << a.name;
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

TEST(Probe, OnePodEveryTurnAndNearFullHitsAfterTheFirst) {
  // Measured: chosen pod the same for all 5 turns; hit rate 0% then 99.7-100%.
  const Scenario s = load_scenario(testing::source_path("scenarios/loxilb-3pod-probe.yaml"));
  const RunResult r = run_scenario(s, 1);
  const auto& records = r.arms[0].records;
  ASSERT_EQ(records.size(), 5u);
  for (const auto& rec : records) {
    EXPECT_EQ(rec.pod, records[0].pod) << "turn " << rec.turn;
    const double hit = static_cast<double>(rec.cached_tokens) / rec.prompt_tokens;
    if (rec.turn == 1) {
      EXPECT_EQ(rec.cached_tokens, 0);
    } else {
      EXPECT_GE(hit, 0.99) << "turn " << rec.turn;
    }
  }
}

}  // namespace
}  // namespace fleetsim
