// The API server in front of a pod's engine: its processes take requests in arrival order, one
// at a time each (vLLM's frontend is one asyncio loop with one tokenizer thread), so a burst
// reaches the engine spread out and in the order it was sent.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Four short requests sent within 4 us to one pod whose API server spends 100 ms on each; the
// prompt lengths differ, so a per-request delay alone would hand the shortest to the engine
// first.
std::string burst_yaml(int processes) {
  return "name: api\nseed: 1\n"
         "fleet:\n  pods: 1\n  gpu: H100-SXM\n  model: Llama-3.1-8B\n"
         "  server: {api_overhead_ms: 100, api_overhead_ms_per_1k_tokens: 50, api_server_count: " +
         std::to_string(processes) +
         "}\n"
         "workload:\n  type: open_loop\n  arrival: constant\n  rate: 1000000\n  max_requests: 4\n"
         "  prompt_tokens: {dist: uniform, low: 16, high: 400}\n  output_tokens: 1\n"
         "arms:\n  - name: a\n    policy: round_robin\n";
}

std::vector<double> first_tokens_ms(int processes) {
  const RunResult r = run_scenario(parse_scenario(burst_yaml(processes), "api.yaml"), 1);
  std::vector<double> out;
  for (const auto& q : r.arms[0].records) out.push_back(static_cast<double>(q.first_token) / 1e6);
  return out;
}

TEST(ApiServer, OneProcessTakesABurstInArrivalOrderOneAtATime) {
  const std::vector<double> t = first_tokens_ms(1);
  ASSERT_EQ(t.size(), 4u);
  // Each leaves the API server 100 ms or more after the one before it, in the order sent (a
  // first token comes one engine step, a few ms, later).
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GE(t[i] - t[i - 1], 90.0) << i;
  EXPECT_GE(t[0], 100.0);
  EXPECT_GE(t[3], 400.0);
}

TEST(ApiServer, MoreProcessesTakeMoreRequestsAtOnce) {
  const std::vector<double> one = first_tokens_ms(1);
  const std::vector<double> four = first_tokens_ms(4);
  ASSERT_EQ(four.size(), 4u);
  // Four processes take the four requests together: the last is served about when the first
  // alone would be (100 ms plus its tokens), not 300 ms later.
  EXPECT_LT(*std::max_element(four.begin(), four.end()), 160.0);
  EXPECT_GT(one.back(), *std::max_element(four.begin(), four.end()) + 250.0);
}

}  // namespace
}  // namespace fleetsim
