// Validation on a real trace: the Mooncake FAST'25 synthetic trace replayed on one pod, whose KV
// cache then acts as one global cache. ../shared/data/README.md gives the token-weighted reuse of
// this trace through one global LRU of 512-token blocks: unlimited 65.1%, 3M tokens 31.5%, 1M
// 14.2%. The pod's 16-token vLLM blocks, its last-token recompute and its pinned running blocks
// make the figures close, not identical: within 2 points.
#include <gtest/gtest.h>

#include <filesystem>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

const std::string kTrace =
    std::string(FLEETSIM_SHARED_DIR) + "/data/mooncake/synthetic_trace.jsonl";

struct Case {
  const char* name;
  std::int64_t blocks;  // KV cache of the pod, in 16-token blocks
  double reference_pct;
};

// An H200 pod with `server` (the body of a flow map) replaying the trace slowed 4x, so one pod
// keeps up with it (reuse barely depends on timing, but a queue past the gateway's timeout would
// fail requests). The trace's longest requests (191,386 tokens) are past Llama 3.1's 131,072, so
// the pod is allowed a longer max_model_len, as the scenarios do.
Scenario one_pod(const std::string& server) {
  const std::string yaml =
      "name: mooncake-reuse\nseed: 42\n"
      "fleet:\n  pods: 1\n  gpu: H200\n  model: Llama-3.1-8B\n  server: {max_model_len: 200000, "
      "allow_long_max_model_len: true, " +
      server + "}\nworkload:\n  type: mooncake_trace\n  file: '" + kTrace +
      "'\n  time_scale: 4\narms:\n  - name: one\n    policy: round_robin\n";
  return parse_scenario(yaml, "mooncake-reuse.yaml");
}

class MooncakeReuse : public ::testing::TestWithParam<Case> {};

TEST_P(MooncakeReuse, MatchesTheGlobalLruFigure) {
  ASSERT_TRUE(std::filesystem::exists(kTrace)) << kTrace << " missing (FLEETSIM_SHARED_DIR)";
  const Case& c = GetParam();
  const Scenario s = one_pod("num_gpu_blocks_override: " + std::to_string(c.blocks));
  const ArmResult arm = run_arm(s, s.arms[0]);
  EXPECT_EQ(arm.summary.requests, 3993);
  EXPECT_EQ(arm.summary.completed, 3993);
  EXPECT_EQ(arm.summary.failed, 0);
  const double pct = 100 * arm.summary.prefix_cache_reuse;
  EXPECT_NEAR(pct, c.reference_pct, 2.0) << c.name;
  // Every query counted: the trace's 61,194,628 prompt tokens, once each.
  std::int64_t queries = 0;
  for (const auto& p : arm.summary.per_pod) queries += p.prefix_cache_queries;
  EXPECT_EQ(queries, 61194628);
}

INSTANTIATE_TEST_SUITE_P(CacheSizes, MooncakeReuse,
                         ::testing::Values(Case{"unlimited", 4'000'000, 65.1},
                                           Case{"tokens_3M", 187'500, 31.5},
                                           Case{"tokens_1M", 62'500, 14.2}),
                         [](const auto& p) { return std::string(p.param.name); });

// KV offloading: a 1M-token GPU cache with a 10M-token host tier behind it. The host tier holds
// every block the GPU computed (LRU), so what the two together spare is the 10M-token global LRU's
// figure, 57.7%, while vLLM's own prefix-cache counter keeps counting the GPU's hits alone.
TEST(MooncakeReuseWithHostTier, GpuPlusHostIsTheLargerCachesFigure) {
  ASSERT_TRUE(std::filesystem::exists(kTrace)) << kTrace << " missing (FLEETSIM_SHARED_DIR)";
  // 625,000 blocks of 16 tokens x 131,072 bytes a token (Llama-3.1-8B, BF16 KV) = 1220.7 GiB.
  const Scenario s = one_pod("num_gpu_blocks_override: 62500, kv_offloading_size_gib: 1220.703125");
  const ArmResult arm = run_arm(s, s.arms[0]);
  EXPECT_EQ(arm.summary.completed, 3993);
  ASSERT_TRUE(arm.summary.kv_offload.has_value());
  EXPECT_NEAR(100 * arm.summary.kv_offload->combined_reuse, 57.7, 2.0);
  EXPECT_NEAR(100 * arm.summary.prefix_cache_reuse, 14.2, 2.0);
  EXPECT_EQ(arm.summary.kv_offload->queries, 61194628);
}

}  // namespace
}  // namespace fleetsim
