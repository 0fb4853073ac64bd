// The gateway gives up on a request (its first byte is late) and resets the stream; vLLM aborts
// a request whose client went away, so a timed-out request stops taking the pod's time and KV.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Ten requests at once on one pod that runs two at a time, each decoding 500 tokens (seconds):
// the eight that wait have no first byte by the 2 s timeout.
std::string burst_yaml() {
  return "name: abort\nseed: 3\n"
         "fleet:\n  pods: 1\n  gpu: L40S\n  model: Llama-3.1-8B\n  server: {max_num_seqs: 2}\n"
         "workload:\n  type: open_loop\n  rate: 1000\n  max_requests: 10\n"
         "  prompt_tokens: {dist: constant, value: 1000}\n"
         "  output_tokens: {dist: constant, value: 500}\n"
         "gateway: {request_timeout_s: 2}\n"
         "arms:\n  - name: a\n    policy: round_robin\n";
}

// Runs `yaml` and checks its requests' outcomes and the prompt tokens its one pod looked up;
// returns the pod's figures.
PodSummary expect_outcome(const std::string& yaml, std::int64_t completed, std::int64_t failed,
                          std::int64_t queried_tokens) {
  const RunResult r = run_scenario(parse_scenario(yaml, "abort.yaml"), 1);
  const ArmSummary& a = r.arms[0].summary;
  EXPECT_EQ(a.completed, completed);
  EXPECT_EQ(a.failed, failed);
  if (a.per_pod.size() != 1U) {
    ADD_FAILURE() << a.per_pod.size() << " pods";
    return {};
  }
  EXPECT_EQ(a.per_pod[0].prefix_cache_queries, queried_tokens);
  return a.per_pod[0];
}

TEST(Abort, ATimedOutRequestIsNeverComputed) {
  // Only the two that ran were ever looked up: the eight left the queue when the gateway gave
  // up on them, instead of being computed for nobody once the first two were done.
  expect_outcome(burst_yaml(), 2, 8, 2 * 1000);
}

TEST(Abort, ARequestTimedOutInTheApiServerNeverReachesTheEngine) {
  // An API server that takes 3 s a request (a slow tokenizer, say): every request times out at
  // 2 s while still there, and none of them is then computed.
  std::string yaml = burst_yaml();
  yaml.replace(yaml.find("max_num_seqs: 2}"), 16, "max_num_seqs: 2, api_overhead_ms: 3000}");
  expect_outcome(yaml, 0, 10, 0);
}

TEST(Abort, APipelineAbortsARequestWhenItsMicrobatchEnds) {
  // A 60,000-token prompt takes 30 chunks, seconds on an L40S: the gateway gives up at 2 s while
  // its chunks are under way in a pipeline of two stages. It gets no further chunk, leaves once
  // those end, and every block comes back (run_scenario checks it): no token is ever sampled.
  std::string yaml = burst_yaml();
  yaml.replace(yaml.find("max_num_seqs: 2}"), 16, "max_num_seqs: 2, pipeline_parallel_size: 2}");
  yaml.replace(yaml.find("max_requests: 10"), 16, "max_requests: 1");
  yaml.replace(yaml.find("value: 1000"), 11, "value: 60000");
  EXPECT_EQ(expect_outcome(yaml, 0, 1, 60000).generation_tokens, 0);
}

}  // namespace
}  // namespace fleetsim
