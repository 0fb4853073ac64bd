// The benchmark campaign: replicates paired by seed, intervals, equivalence, the ramp's plateau
// and knee, gates and verdicts; the same result at any thread count.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/errors.h"
#include "sim/fleet/campaign/campaign.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

class Campaign : public testing::TempDirTest {
 protected:
  Campaign() : TempDirTest("fleetsim-campaign-") {}

  std::string scenario(const std::string& arms, const std::string& extra = "") {
    std::string y = testing::small_scenario_yaml("round_robin");
    y = y.substr(0, y.find("arms:")) + "arms:\n" + arms + extra;
    return testing::write_file(dir_ / "s.yaml", y);
  }

  static const Comparison& find(const CampaignResult& r, const std::string& arm,
                                const std::string& metric) {
    const auto it = std::find_if(r.comparisons.begin(), r.comparisons.end(),
                                 [&](const auto& c) { return c.arm == arm && c.metric == metric; });
    EXPECT_NE(it, r.comparisons.end()) << arm << " " << metric;
    return *it;
  }
};

const std::string kEppAndRr = "  - {name: epp, policy: epp}\n  - {name: rr, policy: round_robin}\n";

TEST_F(Campaign, ThreadsDoNotChangeTheResult) {
  const std::string path = scenario(kEppAndRr, "campaign: {replicates: 3, ramp_steps: 4}\n");
  CampaignOptions one;
  one.threads = 1;
  CampaignOptions many;
  many.threads = 4;
  EXPECT_EQ(campaign_json(run_campaign(path, one)).dump(),
            campaign_json(run_campaign(path, many)).dump());
}

TEST_F(Campaign, ReplicatesAreSeedsInOrderAndArmsArePairedBySeed) {
  const CampaignResult r =
      run_campaign(scenario(kEppAndRr, "campaign: {replicates: 5, ramp_steps: 3}\n"), {});
  ASSERT_EQ(r.seeds.size(), 5u);
  EXPECT_EQ(r.seeds.front(), 7u);  // the scenario's seed, then +1 each
  EXPECT_EQ(r.seeds.back(), 11u);
  EXPECT_EQ(r.baseline, "epp");
  ASSERT_EQ(r.arms.size(), 2u);
  for (const auto& a : r.arms) {
    for (const auto& m : a.metrics) {
      ASSERT_EQ(m.values.size(), 5u);
      EXPECT_LE(m.ci.low, m.spread.mean);
      EXPECT_GE(m.ci.high, m.spread.mean);
    }
  }
  // Round robin scatters each conversation over the pods; the picker keeps it where its prefix
  // is cached, so the difference in reuse is large and sure.
  const Comparison& reuse = find(r, "rr", "prefix_cache_reuse_pct");
  EXPECT_EQ(reuse.finding, "lower");
  EXPECT_EQ(reuse.reading, "worse") << "less reuse is worse";
  EXPECT_LT(reuse.ci.high, 0);
  EXPECT_LT(reuse.diff, -reuse.margin);
  // Holm never makes a p value smaller, and the smallest of m grows by m.
  double smallest = 1, smallest_adjusted = 1;
  for (const Comparison& c : r.comparisons) {
    EXPECT_GE(c.diff_p_holm, c.diff_p) << c.metric;
    EXPECT_GE(c.tost_p_holm, c.tost.p_value) << c.metric;
    if (c.diff_p < smallest) {
      smallest = c.diff_p;
      smallest_adjusted = c.diff_p_holm;
    }
  }
  EXPECT_DOUBLE_EQ(smallest_adjusted,
                   std::min(1.0, static_cast<double>(r.comparisons.size()) * smallest));
}

TEST_F(Campaign, TwinArmsAreEquivalentAndPublishable) {
  const CampaignResult r = run_campaign(
      scenario("  - {name: a, policy: round_robin}\n  - {name: b, policy: round_robin}\n",
               "campaign: {max_cv_pct: 1000, ramp_steps: 3}\n"),
      {});
  ASSERT_EQ(r.comparisons.size(), 3u);
  for (const auto& c : r.comparisons) {
    EXPECT_EQ(c.finding, "equivalent") << c.metric;
    EXPECT_EQ(c.diff, 0) << c.metric;
  }
  EXPECT_EQ(r.verdict, "PUBLISHABLE");
  for (const auto& g : r.gates) EXPECT_TRUE(g.ok) << g.name << ": " << g.detail;
}

TEST_F(Campaign, GatesDecideTheVerdict) {
  const std::string twins =
      "  - {name: a, policy: round_robin}\n  - {name: b, policy: round_robin}\n";
  CampaignOptions two;
  two.replicates = 2;
  CampaignResult r =
      run_campaign(scenario(twins, "campaign: {max_cv_pct: 1000, ramp_steps: 3}\n"), two);
  EXPECT_EQ(r.verdict, "ADD_REPLICATES");
  EXPECT_EQ(r.suggested_replicates, 5);
  r = run_campaign(scenario(twins, "campaign: {max_cv_pct: 0.001, ramp_steps: 3}\n"), {});
  EXPECT_EQ(r.verdict, "UNSTABLE");
  // A pod too small for any request fails the health phase, and nothing after it counts.
  CampaignOptions tiny;
  tiny.overrides = {"fleet.server.num_gpu_blocks_override=2"};
  r = run_campaign(scenario(twins, "campaign: {ramp_steps: 2}\n"), tiny);
  EXPECT_EQ(r.verdict, "INVALID");
  EXPECT_EQ(r.health.problems.size(), 3u);
}

TEST_F(Campaign, RampStopsAtItsPlateauAndFindsTheKnee) {
  // Enough conversations that the ramp's concurrency is never capped by them, and a TTFT target
  // that one pod stops meeting half-way up the ramp.
  CampaignOptions o;
  o.overrides = {"workload.conversations=256"};
  const CampaignResult r =
      run_campaign(scenario(kEppAndRr,
                            "slo: {ttft_ms: 150}\n"
                            "campaign: {replicates: 2, ramp_steps: 8, plateau_gain_pct: 20}\n"),
                   o);
  const CalibratePhase& c = r.calibrate;
  ASSERT_TRUE(c.skipped.empty()) << c.skipped;
  EXPECT_EQ(c.path, "workload.concurrency");
  ASSERT_EQ(c.levels.size(), 8u);  // 1, 2, 4, ..., 128
  EXPECT_EQ(c.levels[3].value, "8");
  ASSERT_GE(c.plateau_level, 1);
  double best = 0;
  for (int i = 0; i < c.plateau_level; ++i) {
    best = std::max(best, c.levels[static_cast<size_t>(i)].throughput_req_s);
  }
  EXPECT_DOUBLE_EQ(c.capacity_req_s, best);
  EXPECT_LT(c.levels[static_cast<size_t>(c.plateau_level)].throughput_req_s, best * 1.2);
  ASSERT_TRUE(c.knee.has_value());
  bool above = false;
  int checked_above = 0;
  for (const auto& l : c.levels) {
    ASSERT_TRUE(l.slo_attainment_pct.has_value());
    if (above) {
      EXPECT_LT(*l.slo_attainment_pct, 90.0) << l.value;
      ++checked_above;
    }
    if (l.value == *c.knee) {
      EXPECT_GE(*l.slo_attainment_pct, 90.0);
      above = true;
    }
  }
  EXPECT_GT(checked_above, 0) << "the knee should fall inside the ramp";
  // With an slo section its attainment is analysed too.
  EXPECT_EQ(r.arms[0].metrics.back().metric, "slo_attainment_pct");
}

TEST_F(Campaign, ASetLoadIsTheABsAndTheRampStillRampsIt) {
  CampaignOptions o;
  o.overrides = {"workload.concurrency=9"};
  const CampaignResult r =
      run_campaign(scenario(kEppAndRr, "campaign: {replicates: 2, ramp_steps: 3}\n"), o);
  ASSERT_TRUE(r.calibrate.skipped.empty()) << r.calibrate.skipped;
  ASSERT_EQ(r.calibrate.levels.size(), 3u);
  EXPECT_EQ(r.calibrate.levels[2].value, "4");
}

TEST_F(Campaign, CalibrateSaysWhyItCannotRun) {
  std::string pooled = testing::small_pooled_scenario_yaml("round_robin");
  const CampaignResult r = run_campaign(
      testing::write_file(dir_ / "p.yaml", pooled + "campaign: {replicates: 2}\n"), {});
  EXPECT_NE(r.calibrate.skipped.find("several pools"), std::string::npos) << r.calibrate.skipped;
  // Time-sliced neighbours make one pod alone unlike the fleet's; a MIG instance does not.
  CampaignOptions o;
  o.overrides = {"fleet.gpu=RTX-PRO-6000", "fleet.pods_per_gpu=2",
                 "fleet.server.gpu_memory_utilization=0.45"};
  const std::string plain =
      testing::small_scenario_yaml("round_robin") + "campaign: {replicates: 2, ramp_steps: 2}\n";
  const auto path = testing::write_file(dir_ / "s.yaml", plain);
  EXPECT_NE(run_campaign(path, o).calibrate.skipped.find("pods share GPUs"), std::string::npos);
  o.overrides.push_back("fleet.gpu_sharing=mig");
  const CampaignResult mig = run_campaign(path, o);
  EXPECT_TRUE(mig.calibrate.skipped.empty()) << mig.calibrate.skipped;
  EXPECT_EQ(mig.calibrate.levels.size(), 2u);
}

TEST_F(Campaign, BadSettingsNameTheFieldAndTheValidNames) {
  auto error_of = [&](const std::string& extra) -> std::string {
    try {
      run_campaign(scenario(kEppAndRr, extra), {});
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string e = error_of("campaign: {metrics: 'ttft_p95_ms, speed'}\n");
  EXPECT_NE(e.find("campaign.metrics: unknown metric 'speed'"), std::string::npos) << e;
  EXPECT_NE(e.find("throughput_req_s"), std::string::npos) << e;
  e = error_of("campaign: {baseline: least}\n");
  EXPECT_NE(e.find("campaign.baseline: no arm named 'least'; the scenario's arms: epp, rr"),
            std::string::npos)
      << e;
  e = error_of("campaign: {metrics: goodput_req_s}\n");
  EXPECT_NE(e.find("needs the scenario's slo section"), std::string::npos) << e;
  e = error_of("campaign: {replicates: 1}\n");
  EXPECT_NE(e.find("campaign.replicates"), std::string::npos) << e;
  e = error_of("campaign: {replicate: 4}\n");
  EXPECT_NE(e.find("replicate"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
