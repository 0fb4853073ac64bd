// The content hazard through whole runs: a policy that routes by prompt content, on a trace whose
// prompts share nothing, is warned about; a policy that ignores content is not (and no policy is
// on shared prompts: tests/contract_test.cc).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cctype>
#include <set>

#include "models/trace_test_util.h"
#include "policies/policy.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A trace of 40 requests with token counts and no text, and one arm of `policy`.
std::string textless_scenario(const std::string& policy) {
  std::string csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
  for (int i = 0; i < 40; ++i) {
    csv += "2023-11-16 18:15:" + std::to_string(10 + i) + ".0,600,20\n";
  }
  return "name: textless\nseed: 3\nfleet: {pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
         "workload: {type: azure_trace, file: " +
         testing::write_temp("textless.csv", csv) + "}\narms:\n  - {name: a, policy: " + policy +
         "}\n";
}

class EveryPolicyOnATextlessTrace : public ::testing::TestWithParam<std::string> {};

// The built-in policies that follow prompt content (prefix blocks or the leading segment).
const std::set<std::string> kFollowContent = {
    "aibrix_prefix",       "chwbl", "consistent_hash",   "dynamo_kv", "epp",
    "epp-llmd-load-aware", "hrw",   "sglang_cache_aware"};

TEST_P(EveryPolicyOnATextlessTrace, WarnsExactlyWhenItFollowsContent) {
  const Scenario s = parse_scenario(textless_scenario(GetParam()), "textless.yaml");
  const ArmResult arm = run_arm(s, s.arms[0]);
  if (kFollowContent.count(GetParam()) > 0) {
    EXPECT_THAT(
        arm.warnings,
        ElementsAre(HasSubstr("the policy routes by prompt content, but none of 40 completed")));
  } else {
    EXPECT_THAT(arm.warnings, IsEmpty());
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryPolicyOnATextlessTrace,
                         ::testing::ValuesIn(PolicyRegistry::instance().names()),
                         [](const auto& p) {
                           std::string name = p.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace fleetsim
