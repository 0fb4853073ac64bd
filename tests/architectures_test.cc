// Models beyond grouped-KV full attention through whole runs: sliding-window layers (gpt-oss),
// multi-head latent attention with shared experts and dense layers (DeepSeek).
#include <gtest/gtest.h>

#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// gpt-oss-20b's shapes on one L40S, with or without its sliding window, under long prompts
// that fill the KV cache.
std::string oss_yaml(int window) {
  return std::string("name: oss\nseed: 5\n") +
         "fleet:\n  pods: 1\n  gpu: L40S\n  model: oss\n  models:\n"
         "    - {name: oss, num_hidden_layers: 24, hidden_size: 2880, num_attention_heads: 64,\n"
         "       num_key_value_heads: 8, head_dim: 64, num_experts: 32, num_experts_per_tok: 4,\n"
         "       moe_intermediate_size: 2880, vocab_size: 201088, weight_dtype: mxfp4,\n"
         "       quantized: experts, sliding_window: " +
         std::to_string(window) + ", sliding_window_layers: " + (window > 0 ? "12" : "0") +
         "}\n"
         "workload:\n  type: multi_turn_chat\n  conversations: 96\n  turns: 2\n  concurrency: 96\n"
         "  system_prompt_tokens: {dist: constant, value: 6000}\n"
         "  question_tokens: {dist: constant, value: 200}\n"
         "  answer_tokens: {dist: constant, value: 300}\n"
         "arms:\n  - name: a\n    policy: round_robin\n";
}

nlohmann::json run_json(const std::string& yaml, int threads = 1) {
  const Scenario s = parse_scenario(yaml, "oss.yaml", {});
  return result_json(run_scenario(s, threads), s);
}

TEST(Architectures, SlidingWindowLayersLeaveRoomForTwiceTheTokens) {
  const FleetFacts full = fleet_facts(parse_scenario(oss_yaml(0), "oss.yaml", {}));
  const FleetFacts window = fleet_facts(parse_scenario(oss_yaml(128), "oss.yaml", {}));
  // A block of the chain is a page of the 12 full-attention layers instead of all 24.
  EXPECT_NEAR(
      static_cast<double>(window.kv_blocks_per_pod) / static_cast<double>(full.kv_blocks_per_pod),
      2.0, 0.01);
  EXPECT_NEAR(window.kv_gib_per_pod, full.kv_gib_per_pod, 0.01);
  // 96 prompts of ~6,500 tokens need ~624k tokens of KV: more than either cache holds, so the
  // model that holds twice the tokens preempts less and serves its queue sooner.
  const nlohmann::json a = run_json(oss_yaml(0));
  const nlohmann::json b = run_json(oss_yaml(128));
  const auto& sa = a["arms"][0]["summary"];
  const auto& sb = b["arms"][0]["summary"];
  EXPECT_EQ(sa["completed"], sb["completed"]);
  EXPECT_LT(sb["ttft_ms"]["p50"].get<double>(), 0.8 * sa["ttft_ms"]["p50"].get<double>());
  EXPECT_GT(sb["throughput_req_s"].get<double>(), sa["throughput_req_s"].get<double>());
}

TEST(Architectures, ASlidingWindowRunIsTheSameAtAnyThreadCount) {
  EXPECT_EQ(run_json(oss_yaml(128), 1).dump(), run_json(oss_yaml(128), 4).dump());
}

std::string deepseek_yaml(int tp) {
  return "name: ds\nseed: 5\nfleet:\n  pods: 1\n  gpu: H200\n  model: DeepSeek-R1\n"
         "  server: {block_size: 64, tensor_parallel_size: " +
         std::to_string(tp) +
         "}\n"
         "workload:\n  type: multi_turn_chat\n  conversations: 16\n  turns: 3\n  concurrency: 8\n"
         "  system_prompt_tokens: {dist: constant, value: 2000}\n"
         "  question_tokens: {dist: constant, value: 100}\n"
         "  answer_tokens: {dist: constant, value: 200}\n"
         "arms:\n  - name: a\n    policy: round_robin\n";
}

TEST(Architectures, DeepSeekR1FitsOnEightH200sAndNotOnFour) {
  const nlohmann::json r = run_json(deepseek_yaml(8));
  const auto& s = r["arms"][0]["summary"];
  EXPECT_EQ(s["completed"], 48);
  EXPECT_GT(s["prefix_cache_reuse"].get<double>(), 0.5);
  // 671B FP8 parameters and a 70 KB latent a token on each rank: tens of GiB left for KV.
  EXPECT_GT(r["fleet"]["kv_gib_per_pod"].get<double>(), 30.0);
  try {
    run_json(deepseek_yaml(4));
    ADD_FAILURE() << "DeepSeek-R1 on four H200s was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit on H200"), std::string::npos) << e.what();
  }
}

TEST(Architectures, DeepSeekOnHopperRunsTheBlocksFlashMlaImposes) {
  std::string yaml = deepseek_yaml(8);
  yaml.replace(yaml.find("block_size: 64"), 14, "block_size: 16");
  const nlohmann::json r = run_json(yaml);
  EXPECT_EQ(r["fleet"]["kv_block_size"], 64);
  // The same run as one that asks for 64-token blocks: hashes, hits and capacity all use them.
  const nlohmann::json explicit64 = run_json(deepseek_yaml(8));
  EXPECT_EQ(r["arms"][0]["summary"]["prefix_cache_reuse"],
            explicit64["arms"][0]["summary"]["prefix_cache_reuse"]);
  EXPECT_FALSE(explicit64["fleet"].contains("kv_block_size"));
  // The same GPU described without its compute capability keeps 16-token blocks, whose finer
  // grain hits more of each prompt.
  std::string unknown = yaml;
  unknown.replace(unknown.find("gpu: H200"), 9,
                  "gpu: H200-like\n  gpus:\n    - {name: H200-like, memory_gib: 139.8, "
                  "memory_bandwidth_gbs: 4800, bf16_tflops: 989.4, fp8_tflops: 1978.9, "
                  "interconnect_gbs: 450}");
  const nlohmann::json fine = run_json(unknown);
  EXPECT_FALSE(fine["fleet"].contains("kv_block_size"));
  EXPECT_GT(fine["arms"][0]["summary"]["prefix_cache_reuse"].get<double>(),
            r["arms"][0]["summary"]["prefix_cache_reuse"].get<double>());
  // A pool of a model without MLA beside it cannot share 16-token blocks.
  const std::string pools =
      "name: ds\nseed: 5\nfleet:\n  server: {block_size: 16}\n  pools:\n"
      "    - {name: ds, pods: 1, gpu: H200, model: DeepSeek-R1,\n"
      "       server: {tensor_parallel_size: 8}}\n"
      "    - {name: llama, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
      "workload:\n  type: multi_turn_chat\n  conversations: 4\n  turns: 1\n  concurrency: 2\n"
      "arms:\n  - name: a\n    policy: round_robin\n";
  try {
    run_json(pools);
    ADD_FAILURE() << "pools of different block sizes were accepted";
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("oss.yaml:"), std::string::npos) << what;
    EXPECT_NE(what.find("fleet.pools.1.server.block_size: pool 'llama' runs 16-token KV blocks "
                        "and pool 'ds' 64"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("e.g. 64"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace fleetsim
