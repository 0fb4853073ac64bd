// Speculative decoding through a whole run (server.speculative_method, num_speculative_tokens,
// speculative_acceptance): decodes verify drafts and stream several tokens a step.
#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

nlohmann::json run_json(const std::vector<std::string>& sets, int threads = 1) {
  const Scenario s =
      parse_scenario(testing::small_scenario_yaml("round_robin"), "small.yaml", sets);
  return result_json(run_scenario(s, threads), s);
}

const std::vector<std::string> kEagle = {"fleet.server.speculative_method=eagle",
                                         "fleet.server.num_speculative_tokens=3"};

TEST(SpecDecode, DraftsShortenTheTimeBetweenTokens) {
  const nlohmann::json plain = run_json({});
  const nlohmann::json eagle = run_json(kEagle);
  const auto& a = plain["arms"][0]["summary"];
  const auto& b = eagle["arms"][0]["summary"];
  EXPECT_FALSE(a.contains("spec_decode"));
  ASSERT_TRUE(b.contains("spec_decode"));
  EXPECT_FALSE(plain["fleet"].contains("speculative_method"));
  EXPECT_EQ(eagle["fleet"]["speculative_method"], "eagle");
  EXPECT_EQ(eagle["fleet"]["num_speculative_tokens"], 3);
  EXPECT_LT(b["tpot_ms"]["p50"].get<double>(), 0.75 * a["tpot_ms"]["p50"].get<double>());
  EXPECT_EQ(b["completed"], a["completed"]);
  // The same answers: speculation changes when tokens come, not how many.
  const double out_a = a["output_tokens_per_s"].get<double>() * a["duration_s"].get<double>();
  const double out_b = b["output_tokens_per_s"].get<double>() * b["duration_s"].get<double>();
  EXPECT_NEAR(out_b, out_a, 0.01 * out_a);
  // The default acceptance (0.71 a position) gives vLLM's mean acceptance length of ~2.6.
  EXPECT_NEAR(b["spec_decode"]["mean_acceptance_length"].get<double>(), 2.57, 0.15);
  // Drafts the target always rejects only cost time.
  std::vector<std::string> useless = kEagle;
  useless.push_back("fleet.server.speculative_acceptance=0");
  const nlohmann::json c = run_json(useless);
  EXPECT_GT(c["arms"][0]["summary"]["tpot_ms"]["p50"].get<double>(),
            a["tpot_ms"]["p50"].get<double>());
  EXPECT_DOUBLE_EQ(c["arms"][0]["summary"]["spec_decode"]["mean_acceptance_length"], 1.0);
}

TEST(SpecDecode, TheSameAtAnyThreadCount) {
  EXPECT_EQ(run_json(kEagle, 1).dump(), run_json(kEagle, 4).dump());
}

TEST(SpecDecode, TokensNeedAMethodAndZeroTokensAreNoSpeculation) {
  try {
    run_json({"fleet.server.num_speculative_tokens=3"});
    ADD_FAILURE() << "tokens without a method were accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("needs server.speculative_method"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(run_json({"fleet.server.speculative_method=eagle"}).dump(), run_json({}).dump());
  try {
    run_json({"fleet.server.speculative_method=medusa"});
    ADD_FAILURE() << "accepted medusa";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("none, ngram, eagle, mtp"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
