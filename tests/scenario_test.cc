// A bad scenario is refused with a message naming the file, the line, the field, what was
// expected and the valid names; --set overrides reach any field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  try {
    parse_scenario(yaml, "bad.yaml", sets);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

std::string with(const std::string& from, const std::string& to) {
  std::string y = testing::small_scenario_yaml("round_robin");
  const auto at = y.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return y.replace(at, from.size(), to);
}

TEST(Scenario, SmallScenarioParses) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("epp"), "small.yaml");
  EXPECT_EQ(s.fleet.pods, 3);
  EXPECT_EQ(s.arms.size(), 1u);
  EXPECT_EQ(s.arms[0].policy, "epp");
  EXPECT_EQ(s.workload.get_int("conversations"), 12);
}

TEST(Scenario, UnknownPolicyListsValidOnes) {
  const std::string e = error_of(testing::small_scenario_yaml("no_such_policy"));
  EXPECT_NE(e.find("bad.yaml:20: arms.0.policy"), std::string::npos) << e;
  EXPECT_NE(e.find("valid policies:"), std::string::npos) << e;
  EXPECT_NE(e.find("round_robin"), std::string::npos) << e;
}

TEST(Scenario, UnknownGpuAndModelListValidOnes) {
  std::string e = error_of(with("gpu: L40S", "gpu: L41S"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.gpu"), std::string::npos) << e;
  EXPECT_NE(e.find("A100-80GB-PCIe"), std::string::npos) << e;
  e = error_of(with("model: Qwen2.5-7B-Instruct", "model: Qwen9"));
  EXPECT_NE(e.find("fleet.model"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen3-32B-FP8"), std::string::npos) << e;
}

TEST(Scenario, WrongTypesAndRangesNameTheField) {
  std::string e = error_of(with("pods: 3", "pods: three"));
  EXPECT_NE(e.find("bad.yaml:4: fleet.pods: expected an integer"), std::string::npos) << e;
  e = error_of(with("concurrency: 6", "concurrency: 0"));
  EXPECT_NE(e.find("workload.concurrency: expected int in [1, 1000000], got '0'"),
            std::string::npos)
      << e;
  e = error_of(with("max_num_batched_tokens: 1024", "max_num_batched_tokenz: 1024"));
  EXPECT_NE(e.find("fleet.server.max_num_batched_tokenz"), std::string::npos) << e;
  EXPECT_NE(e.find("valid parameters: "), std::string::npos) << e;
}

TEST(Scenario, AnArmNeedsANonEmptyName) {
  const std::string e = error_of(with("- name: a\n", "- name: ''\n"));
  EXPECT_NE(e.find("bad.yaml:19: arms.0.name: expected a non-empty arm name"), std::string::npos)
      << e;
}

TEST(Scenario, AnArmNameIsAPlainNameForCsvAndSpreadsheets) {
  for (const std::string bad : {"'a,b'", "'=cmd()'", "'x\"y'", "'-a'", "'a b'"}) {
    EXPECT_THAT(error_of(with("- name: a\n", "- name: " + bad + "\n")),
                ::testing::HasSubstr("bad.yaml:19: arms.0.name: arm name"))
        << bad;
  }
  EXPECT_EQ(error_of(with("- name: a\n", "- name: epp-3.rr_x\n")), "(no error)");
}

TEST(Scenario, IntegersAreDecimalInEveryField) {
  // YAML 1.2's decimal rule: leading zeros are decimal (yaml-cpp's own conversion read "017" as
  // octal 15 for some fields and 17 for others); hexadecimal is not an integer.
  const Scenario s = parse_scenario(testing::small_scenario_yaml("round_robin"), "s.yaml",
                                    {"fleet.pods=017", "workload.conversations=010"});
  EXPECT_EQ(s.fleet.pods, 17);
  EXPECT_THAT(error_of(testing::small_scenario_yaml("round_robin"), {"fleet.pods=0x10"}),
              ::testing::HasSubstr("fleet.pods: expected an integer >= 1, got '0x10'"));
  EXPECT_THAT(
      error_of(testing::small_scenario_yaml("round_robin"), {"workload.conversations=0x10"}),
      ::testing::HasSubstr("workload.conversations: expected int"));
}

TEST(Scenario, UnknownTopLevelFieldAndMissingSections) {
  std::string e = error_of("name: x\nfleat: {}\n");
  EXPECT_NE(e.find("bad.yaml:2: fleat: unknown field; valid fields:"), std::string::npos) << e;
  e = error_of("name: x\n");
  EXPECT_NE(e.find("missing field 'fleet'"), std::string::npos) << e;
  e = error_of("name: [x\n");
  EXPECT_NE(e.find("invalid YAML"), std::string::npos) << e;
}

TEST(Scenario, BadDistributionListsKinds) {
  const std::string e = error_of(with("{dist: uniform, low: 20, high: 200}", "{dist: gauss}"));
  EXPECT_NE(e.find("workload.question_tokens.dist"), std::string::npos) << e;
  EXPECT_NE(e.find("lognormal"), std::string::npos) << e;
}

TEST(Scenario, SetOverridesAnyField) {
  const Scenario s = parse_scenario(testing::small_scenario_yaml("epp"), "small.yaml",
                                    {"fleet.pods=5", "arms.a.params.tie_break=rotation",
                                     "workload.question_tokens={dist: constant, value: 7}",
                                     "fleet.cost_model.compute_efficiency=0.5", "seed=9"});
  EXPECT_EQ(s.fleet.pods, 5);
  EXPECT_EQ(s.arms[0].params.get_string("tie_break"), "rotation");
  EXPECT_DOUBLE_EQ(s.workload.get_distribution("question_tokens").mean(), 7.0);
  EXPECT_DOUBLE_EQ(s.fleet.cost_model.get_double("compute_efficiency"), 0.5);
  EXPECT_EQ(s.seed, 9u);
}

TEST(Scenario, AnErrorInsideASetValueNamesTheFieldNotALineOfTheFile) {
  // The value's own text is one line; its line 1 is not the file's.
  const std::string e =
      error_of(testing::small_scenario_yaml("epp"), {"workload.question_tokens={dist: gauss}"});
  EXPECT_NE(e.find("bad.yaml: --set workload.question_tokens.dist: unknown distribution 'gauss'"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("bad.yaml:1:"), std::string::npos) << e;
}

TEST(Scenario, BadSetIsRefused) {
  EXPECT_NE(error_of(testing::small_scenario_yaml("epp"), {"fleet.pods"}).find("PATH=VALUE"),
            std::string::npos);
  EXPECT_NE(error_of(testing::small_scenario_yaml("epp"), {"arms.zz.policy=epp"})
                .find("no list element 'zz'"),
            std::string::npos);
}

TEST(Scenario, MeasuredMetricsAreValidated) {
  std::string y = testing::small_scenario_yaml("epp") + "measured:\n  a: {reuse: 3}\n";
  EXPECT_NE(error_of(y).find("valid metrics: completed, prefix_cache_reuse_pct"),
            std::string::npos);
  y = testing::small_scenario_yaml("epp") + "measured:\n  b: {errors: 0}\n";
  EXPECT_NE(error_of(y).find("no arm named 'b'"), std::string::npos);
}

std::string pooled_with(const std::string& from, const std::string& to,
                        const std::string& policy = "round_robin") {
  std::string y = testing::small_pooled_scenario_yaml(policy);
  const auto at = y.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return y.replace(at, from.size(), to);
}

TEST(Scenario, PoolsInheritTheFleetLevelFields) {
  const Scenario s = parse_scenario(testing::small_pooled_scenario_yaml("epp"), "pooled.yaml");
  EXPECT_EQ(s.fleet.pods, 3);
  EXPECT_EQ(s.fleet.gpu, "L40S+H100-SXM");
  EXPECT_EQ(s.fleet.model, "Qwen2.5-7B-Instruct+Llama-3.1-8B");
  ASSERT_EQ(s.fleet.pools.size(), 2u);
  EXPECT_EQ(s.fleet.pools[0].name, "small");
  EXPECT_EQ(s.fleet.pools[1].pods, 1);
  EXPECT_EQ(s.fleet.pools[1].gpu, "H100-SXM");
  // The fleet-level server section is every pool's default; vLLM's defaults fill the rest.
  EXPECT_EQ(s.fleet.pools[1].server.get_int("max_num_batched_tokens"), 1024);
  EXPECT_EQ(s.fleet.pools[1].server.get_int("block_size"), 16);
  // A pool's own section wins, field by field.
  const Scenario t = parse_scenario(
      pooled_with("model: Llama-3.1-8B}", "model: Llama-3.1-8B, server: {max_num_seqs: 8}}"),
      "pooled.yaml");
  EXPECT_EQ(t.fleet.pools[1].server.get_int("max_num_seqs"), 8);
  EXPECT_EQ(t.fleet.pools[1].server.get_int("max_num_batched_tokens"), 1024);
  // Without pools the fleet is one pool named "default".
  const auto one = fleet_pools(parse_scenario(testing::small_scenario_yaml("epp"), "s.yaml").fleet);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].name, "default");
  EXPECT_EQ(one[0].pods, 3);
}

TEST(Scenario, BadPoolsNameTheFieldAndTheValidNames) {
  std::string e = error_of(pooled_with("pods: 2, gpu: L40S", "pods: 2, gpus: L40S"));
  EXPECT_NE(e.find("bad.yaml:8: fleet.pools.0.gpus: unknown field; valid fields: name, pods"),
            std::string::npos)
      << e;
  e = error_of(pooled_with("{name: big, pods: 1, gpu: H100-SXM,",
                           "{name: small, pods: 1, gpu: "
                           "H100-SXM,"));
  EXPECT_NE(e.find("bad.yaml:9: fleet.pools.1.name: duplicate pool name 'small'"),
            std::string::npos)
      << e;
  e = error_of(pooled_with("pods: 2, gpu: L40S, ", "pods: 2, "));
  EXPECT_NE(e.find("bad.yaml:8: fleet.pools.0: missing field 'gpu' (set it on the pool or at "
                   "fleet level) (one of: "),
            std::string::npos)
      << e;
  e = error_of(pooled_with("gpu: H100-SXM", "gpu: H900"));
  EXPECT_NE(e.find("bad.yaml:9: fleet.pools.1.gpu: unknown GPU 'H900'"), std::string::npos) << e;
  e = error_of(pooled_with("fleet:\n", "fleet:\n  pods: 4\n"));
  EXPECT_NE(e.find("fleet.pods: 4 differs from the pools' 3 pods"), std::string::npos) << e;
  e = error_of(pooled_with("model: Llama-3.1-8B}",
                           "model: Llama-3.1-8B, server: {block_size: "
                           "32}}"));
  EXPECT_NE(e.find("fleet.pools.1.server.block_size: pool 'big' runs 32-token KV blocks and pool "
                   "'small' 16; every pool must use one KV block size"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("latent-attention"), std::string::npos) << e;  // no kernel imposed them
  e = error_of(pooled_with("name: big,", "name: 'big one',"));
  EXPECT_NE(e.find("is not a pool name"), std::string::npos) << e;
}

TEST(Scenario, GpuSharingIsValidatedWhereItIsWritten) {
  std::string e = error_of(with("  pods: 3\n", "  pods: 3\n  gpu_sharing: vgpu\n"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.gpu_sharing"), std::string::npos) << e;
  EXPECT_NE(e.find("time_slicing"), std::string::npos) << e;
  EXPECT_NE(e.find("mig"), std::string::npos) << e;
  EXPECT_NE(e.find("mps"), std::string::npos) << e;
  e = error_of(with("  pods: 3\n", "  pods: 3\n  mps_active_thread_percentage: 50\n"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.mps_active_thread_percentage: applies only under "
                   "gpu_sharing: mps"),
            std::string::npos)
      << e;
  e = error_of(
      with("  pods: 3\n", "  pods: 3\n  gpu_sharing: mps\n  cost_model: {type: fitted}\n"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.gpu_sharing: mps needs cost_model.type roofline"),
            std::string::npos)
      << e;
  e = error_of(pooled_with("model: Llama-3.1-8B}",
                           "model: Llama-3.1-8B, gpu_sharing: mps, cost_model: {type: fitted}}"));
  EXPECT_NE(e.find("bad.yaml:9: fleet.pools.1.gpu_sharing: mps needs"), std::string::npos) << e;
  e = error_of(pooled_with("fleet:\n", "fleet:\n  mps_active_thread_percentage: 40\n"));
  EXPECT_NE(e.find("fleet.mps_active_thread_percentage: applies only under gpu_sharing: mps"),
            std::string::npos)
      << e;
  // A pool inherits the fleet's way, and may say its own.
  const Scenario s = parse_scenario(
      pooled_with("fleet:\n", "fleet:\n  gpu_sharing: mps\n  mps_active_thread_percentage: 40\n"),
      "pooled.yaml");
  EXPECT_EQ(s.fleet.pools[0].gpu_sharing, GpuSharing::kMps);
  EXPECT_EQ(s.fleet.pools[1].mps_active_thread_percentage, 40);
  const Scenario t = parse_scenario(
      pooled_with("model: Llama-3.1-8B}", "model: Llama-3.1-8B, gpu_sharing: mps}"), "pooled.yaml");
  EXPECT_EQ(t.fleet.pools[0].gpu_sharing, GpuSharing::kTimeSlicing);
  EXPECT_EQ(t.fleet.pools[1].gpu_sharing, GpuSharing::kMps);
  EXPECT_EQ(
      fleet_pools(
          parse_scenario(with("  pods: 3\n", "  pods: 3\n  gpu_sharing: mps\n"), "s.yaml").fleet)[0]
          .gpu_sharing,
      GpuSharing::kMps);
}

TEST(Scenario, MigNeedsAGpuWithMigRoomForThePodsAndNoTensorParallelism) {
  std::string e = error_of(with("  pods: 3\n", "  pods: 3\n  gpu_sharing: mig\n"));
  EXPECT_NE(e.find("bad.yaml:5: fleet.gpu_sharing: mig: the L40S has no MIG; GPUs with MIG: "
                   "A100-80GB-PCIe"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("RTX-PRO-6000"), std::string::npos) << e;
  e = error_of(
      with("  gpu: L40S\n", "  gpu: RTX-PRO-6000\n  pods_per_gpu: 5\n  gpu_sharing: mig\n"));
  EXPECT_NE(e.find("bad.yaml:6: fleet.pods_per_gpu: 5 MIG instances on one RTX-PRO-6000; expected "
                   "at most 4"),
            std::string::npos)
      << e;
  e = error_of(with("  gpu: L40S\n", "  gpu: H100-SXM\n  gpu_sharing: mig\n"),
               {"fleet.server.tensor_parallel_size=2"});
  EXPECT_NE(e.find("fleet.server.tensor_parallel_size: MIG instances do not talk peer to peer"),
            std::string::npos)
      << e;
  // Under MIG each vLLM takes gpu_memory_utilization of its own instance: 4 x 0.9 is no excess.
  const Scenario s = parse_scenario(
      with("  gpu: L40S\n", "  gpu: RTX-PRO-6000\n  pods_per_gpu: 4\n  gpu_sharing: mig\n"),
      "s.yaml", {"fleet.server.gpu_memory_utilization=0.9"});
  EXPECT_EQ(s.fleet.gpu_sharing, GpuSharing::kMig);
  // A GPU of the scenario's own says whether it has MIG.
  const std::string own =
      "  gpus:\n    - {name: mine, memory_gib: 40, memory_bandwidth_gbs: 1000, bf16_tflops: 100, "
      "mig_slices: 3}\n";
  e = error_of(with("  gpu: L40S\n", "  gpu: mine\n" + own));
  EXPECT_NE(e.find("fleet.gpus.0.mig_slices: expected 0, 2, 4 or 7"), std::string::npos) << e;
}

TEST(Scenario, AVllmVersionThatIsNoReleaseIsRefusedWithItsLine) {
  const std::string e =
      error_of(with("    max_num_batched_tokens: 1024\n",
                    "    max_num_batched_tokens: 1024\n    vllm_version: latest\n"));
  EXPECT_NE(e.find("bad.yaml:9: fleet.server.vllm_version: expected a vLLM release such as 0.30.0"),
            std::string::npos)
      << e;
}

// The same pod under three releases. From v0.20 vLLM takes 0.92 of the A100's 79.25 GiB instead
// of 0.9: 1.585 GiB, 405.8 blocks of 16 tokens x 256 KiB more. v0.20 also sets the CUDA graphs'
// 0.75 GiB (192 blocks) aside first, which Model Runner V2 no longer does for a dense model.
TEST(Scenario, TheReleaseSetsTheMemoryShareVllmTakesByDefault) {
  const std::string a100 = with("  gpu: L40S\n  model: Qwen2.5-7B-Instruct\n",
                                "  gpu: A100-80GB-PCIe\n  model: Qwen3-32B-FP8\n");
  const auto blocks = [&a100](const std::string& version) {
    return fleet_facts(parse_scenario(a100, "s.yaml", {"fleet.server.vllm_version=" + version}))
        .kv_blocks_per_pod;
  };
  const std::int64_t before = blocks("0.19.1");
  const std::int64_t latest = blocks("0.30.0");
  EXPECT_GE(latest - before, 405);
  EXPECT_LE(latest - before, 406);
  EXPECT_GE(latest - blocks("0.20.0"), 192);
  EXPECT_LE(latest - blocks("0.20.0"), 193);
  EXPECT_EQ(blocks("0.25.1"), latest);
}

TEST(Scenario, ExpertParallelismReachesThePodsCostModel) {
  // Spread whole over four GPUs, a mixture of experts' small decode steps wait for the GPU their
  // tokens load most: the same run decodes more slowly than with its experts split.
  const std::vector<std::string> moe = {"fleet.gpu=H100-SXM", "fleet.model=Qwen3-30B-A3B",
                                        "fleet.server.tensor_parallel_size=4"};
  std::vector<std::string> spread = moe;
  spread.emplace_back("fleet.server.enable_expert_parallel=true");
  const auto tpot = [](const std::vector<std::string>& sets) {
    const Scenario s = parse_scenario(testing::small_scenario_yaml("round_robin"), "s.yaml", sets);
    return run_scenario(s, 1).arms[0].summary.tpot_ms.mean;
  };
  EXPECT_GT(tpot(spread), 1.02 * tpot(moe));
  // The run's header and JSON say so; on four PCIe GPUs, that NCCL carries the all-reduces too.
  const auto facts = [](const std::vector<std::string>& sets) {
    return fleet_facts(parse_scenario(testing::small_scenario_yaml("round_robin"), "s.yaml", sets))
        .pools.front();
  };
  EXPECT_TRUE(facts(spread).expert_parallel);
  EXPECT_FALSE(facts(moe).expert_parallel);
  EXPECT_FALSE(facts(spread).allreduce_through_nccl);  // NVLink
  spread.emplace_back("fleet.gpu=RTX-PRO-6000");
  EXPECT_TRUE(facts(spread).allreduce_through_nccl);
}

TEST(Scenario, APipelineOfStagesHoldsMoreKvAndDecodesThroughEveryStage) {
  const auto sets = [](int pp) {
    return std::vector<std::string>{"fleet.gpu=H100-SXM", "fleet.model=Llama-3.1-8B",
                                    "fleet.server.pipeline_parallel_size=" + std::to_string(pp)};
  };
  const auto scenario = [](const std::vector<std::string>& s) {
    return parse_scenario(testing::small_scenario_yaml("round_robin"), "s.yaml", s);
  };
  const PoolFacts one = fleet_facts(scenario(sets(1))).pools.front();
  const PoolFacts two = fleet_facts(scenario(sets(2))).pools.front();
  EXPECT_EQ(two.pipeline_parallel_size, 2);
  EXPECT_EQ(pool_gpus(two, 1), 6);
  // Each stage's GPU holds half the layers' weights and KV: more than twice the blocks.
  EXPECT_GT(two.kv_blocks_per_pod, 2 * one.kv_blocks_per_pod);
  // A token crosses both stages one after the other: a decode takes about as long as on one
  // GPU, plus the hand-over.
  const auto tpot = [&](int pp) { return run_scenario(scenario(sets(pp)), 1).arms[0].summary; };
  const ArmSummary a = tpot(1);
  const ArmSummary b = tpot(2);
  EXPECT_EQ(b.failed, 0);
  EXPECT_EQ(b.completed, a.completed);
  EXPECT_GT(b.tpot_ms.mean, 0.9 * a.tpot_ms.mean);
  EXPECT_LT(b.tpot_ms.mean, 1.3 * a.tpot_ms.mean);
}

TEST(Scenario, APipelinePrefillsALongPromptsChunksStageBehindStage) {
  // One 48,000-token prompt: its 2,048-token chunks follow each other through the two stages,
  // so its first token comes about twice as soon as on one GPU (a CMP 170HX lab measured 1.8x on
  // a 48K prompt at PP 2).
  const auto ttft = [](int pp) {
    const std::string yaml =
        "name: long\nseed: 1\nfleet: {pods: 1, gpu: H100-SXM, model: Llama-3.1-8B, server: "
        "{max_num_batched_tokens: 2048, pipeline_parallel_size: " +
        std::to_string(pp) +
        "}}\nworkload: {type: open_loop, rate: 1, max_requests: 1, prompt_tokens: 48000, "
        "output_tokens: 2}\narms: [{name: a, policy: round_robin}]\n";
    return run_scenario(parse_scenario(yaml, "long.yaml"), 1).arms[0].summary.ttft_ms.mean;
  };
  const double ratio = ttft(1) / ttft(2);
  EXPECT_GT(ratio, 1.6);
  EXPECT_LT(ratio, 2.0);
}

TEST(Scenario, WhatAPipelineDoesNotRunWithIsRefused) {
  const auto error = [](std::vector<std::string> sets) {
    sets.insert(sets.begin(), "fleet.server.pipeline_parallel_size=4");
    try {
      fleet_facts(parse_scenario(testing::small_scenario_yaml("round_robin"), "s.yaml", sets));
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(error({"fleet.cost_model.type=fitted"}).find("needs cost_model.type roofline"),
            std::string::npos);
  EXPECT_NE(error({"fleet.pods_per_gpu=2", "fleet.server.gpu_memory_utilization=0.45"})
                .find("expected pods_per_gpu 1"),
            std::string::npos);
  EXPECT_NE(
      error({"fleet.server.speculative_method=ngram", "fleet.server.num_speculative_tokens=2"})
          .find("speculative decoding is not modelled"),
      std::string::npos);
  EXPECT_NE(error({"fleet.server.pipeline_parallel_size=40"})
                .find("exceeds Qwen2.5-7B-Instruct's 28 layers"),
            std::string::npos);
}

TEST(Scenario, AnUnknownAllReducePathIsRefusedWithTheValidOnes) {
  const std::string e =
      error_of(testing::small_scenario_yaml("round_robin"),
               {"fleet.server.tensor_parallel_size=2", "fleet.cost_model.allreduce_path=nvswitch"});
  EXPECT_NE(e.find("fleet.cost_model.allreduce_path"), std::string::npos) << e;
  EXPECT_NE(e.find("p2p, host"), std::string::npos) << e;
}

// Settings vLLM refuses are found when the pool's server is configured, after parsing; the
// error still names the pool's place in the file.
TEST(Scenario, ASettingVllmRefusesNamesThePoolsPlace) {
  const Scenario s =
      parse_scenario(pooled_with("model: Llama-3.1-8B}",
                                 "model: Llama-3.1-8B, server: {num_speculative_tokens: 2}}"),
                     "bad.yaml");
  try {
    fleet_facts(s);
    ADD_FAILURE() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad.yaml:9: fleet.pools.1: server.num_speculative_tokens (2) needs "
              "server.speculative_method: ngram, eagle or mtp");
  }
}

TEST(Scenario, AMissingTraceFileIsRefusedAtLoadNamingItsField) {
  const std::string head = "name: t\nfleet: {pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n";
  const std::string arms = "arms: [{name: a, policy: round_robin}]\n";
  try {
    parse_scenario(head + "workload:\n  type: mooncake_trace\n  file: no/such.jsonl\n" + arms,
                   "bad.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "bad.yaml:5: workload.file: cannot open the trace file 'no/such.jsonl'", 0),
              0u)
        << e.what();
  }
  try {
    parse_scenario(head + "workload:\n  type: azure_trace\n" + arms, "bad.yaml");
    ADD_FAILURE() << "accepted";
  } catch (const TraceError& e) {
    EXPECT_EQ(std::string(e.what()),
              "bad.yaml:4: workload: missing field 'file' (the trace file to replay)");
  }
}

TEST(Scenario, AFaultTargetOutsideTheFleetNamesItsLine) {
  const Scenario s =
      parse_scenario(testing::small_scenario_yaml("round_robin") +
                         "faults:\n  - {kind: pod_kill, at_s: 1,\n     target: pod-7}\n",
                     "bad.yaml");
  try {
    run_arm(s, s.arms.front());
    ADD_FAILURE() << "accepted";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "bad.yaml:23: faults.0.target: unknown component 'pod-7'; valid: ", 0),
              0u)
        << e.what();
  }
}

TEST(Scenario, PolicyReferencesAreCheckedAgainstTheFleetAndTheRegistry) {
  std::string e = error_of(testing::small_pooled_scenario_yaml("tier_classifier") +
                           "    params: {small_pool: tiny}\n");
  EXPECT_NE(e.find("bad.yaml:25: arms.0.params.small_pool: no pool named 'tiny' in the fleet; "
                   "valid pools: small, big"),
            std::string::npos)
      << e;
  e = error_of(testing::small_pooled_scenario_yaml("tier_classifier") +
               "    params:\n      inner_params: {tie_brake: random}\n");
  EXPECT_NE(e.find("bad.yaml:26: arms.0.params.inner_params.tie_brake: unknown parameter; valid "
                   "parameters: tie_break"),
            std::string::npos)
      << e;
  e = error_of(testing::small_pooled_scenario_yaml("tier_classifier") +
               "    params: {inner_policy: nope}\n");
  EXPECT_NE(e.find("arms.0.params.inner_policy: unknown policy 'nope'; valid policies:"),
            std::string::npos)
      << e;
  e = error_of(testing::small_pooled_scenario_yaml("tier_classifier") +
               "    params: {inner_params: 3}\n");
  EXPECT_NE(e.find("arms.0.params.inner_params: expected a map of parameters"), std::string::npos)
      << e;
  // On a fleet without pools, the only pool is "default".
  e = error_of(testing::small_scenario_yaml("tier_classifier") + "    params: {big_pool: big}\n");
  EXPECT_NE(e.find("no pool named 'big' in the fleet; valid pools: default"), std::string::npos)
      << e;
  // A map given with --set reaches the policy as a map.
  const Scenario s =
      parse_scenario(testing::small_pooled_scenario_yaml("tier_classifier"), "pooled.yaml",
                     {"arms.a.params.inner_params={tie_break: lowest_index}"});
  EXPECT_EQ(s.arms[0].params.get_string("inner_params"), "{tie_break: lowest_index}");
}

TEST(Scenario, GatewayReplicasAreValidated) {
  std::string e = error_of(pooled_with("replicas: 1", "replicas: 0"));
  EXPECT_NE(e.find("bad.yaml:20: gateway.replicas: expected int in [1, 64], got '0'"),
            std::string::npos)
      << e;
  e = error_of(pooled_with("replica_assignment: round_robin", "replica_assignment: sticky"));
  EXPECT_NE(e.find("valid values: round_robin, random, conversation_hash"), std::string::npos) << e;
}

// `own` (the small scenario with a definition of its own named `name` in place of its catalog
// `field`, gpu or model) gives the very run of the small scenario, but for that name.
void expect_the_catalogs_run(const std::string& own, const char* field, const std::string& name) {
  const Scenario mine = parse_scenario(own, "own.yaml");
  const Scenario cat = parse_scenario(testing::small_scenario_yaml("round_robin"), "cat.yaml");
  nlohmann::json a = result_json(run_scenario(mine, 1), mine);
  const nlohmann::json b = result_json(run_scenario(cat, 1), cat);
  EXPECT_EQ(a["fleet"][field], name);
  a["fleet"][field] = b["fleet"][field];
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(Scenario, AModelOfItsOwnRunsLikeTheCatalogEntryOfTheSameShapes) {
  // Qwen2.5-7B-Instruct's config.json (and the card's parameter count, biases included) under
  // another name gives the very same run.
  const std::string own =
      with("model: Qwen2.5-7B-Instruct",
           "model: my-qwen\n  models:\n    - {name: my-qwen, num_hidden_layers: 28, "
           "hidden_size: 3584, num_attention_heads: 28, num_key_value_heads: 4, "
           "intermediate_size: 18944, vocab_size: 152064, params_b: 7.6156}");
  ASSERT_EQ(parse_scenario(own, "own.yaml").fleet.models.size(), 1u);
  expect_the_catalogs_run(own, "model", "my-qwen");
  // Unknown names list the scenario's models beside the catalog's.
  const std::string e = error_of(own, {"fleet.model=their-qwen"});
  EXPECT_NE(e.find("valid models: my-qwen, Qwen3-32B"), std::string::npos) << e;
}

TEST(Scenario, AGpuOfItsOwnRunsLikeTheCatalogEntryOfTheSameFigures) {
  // The L40S datasheet under another name gives the very same run.
  const std::string own =
      with("gpu: L40S",
           "gpu: my-l40s\n  gpus:\n    - {name: my-l40s, memory_gib: 44.40, "
           "memory_bandwidth_gbs: 864, bf16_tflops: 362.05, fp8_tflops: 733, int8_tops: 733, "
           "interconnect_gbs: 32}");
  ASSERT_EQ(parse_scenario(own, "own.yaml").fleet.gpus.size(), 1u);
  expect_the_catalogs_run(own, "gpu", "my-l40s");
  // A faster part of the same memory serves the same work sooner.
  const Scenario fast = parse_scenario(
      own, "fast.yaml",
      {"fleet.gpus.my-l40s.memory_bandwidth_gbs=1728", "fleet.gpus.my-l40s.bf16_tflops=724.1"});
  const Scenario cat = parse_scenario(testing::small_scenario_yaml("round_robin"), "cat.yaml");
  EXPECT_LT(run_scenario(fast, 1).arms[0].summary.e2e_ms.mean,
            run_scenario(cat, 1).arms[0].summary.e2e_ms.mean);
  // Unknown names list the scenario's GPUs beside the catalog's, and say where to add one.
  const std::string e = error_of(own, {"fleet.gpu=their-gpu"});
  EXPECT_NE(e.find("valid GPUs: my-l40s, A100-80GB-PCIe"), std::string::npos) << e;
  EXPECT_NE(e.find("describe it under fleet.gpus (fleetsim describe gpu)"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
