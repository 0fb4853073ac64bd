// Co-located pods (fleet.pods_per_gpu > 1) time-slice their GPU: a pod whose neighbour is idle
// runs at its solo speed, two busy pods share the GPU's time both ways (sim/fleet/gpu_share.h),
// and only the GPU's part of a step is shared, not the host's. Under MPS a prefill and a decode
// overlap, and the device plug-in's SM cap holds a pod's prefills even when it is alone. Under
// MIG each pod runs on its instance, a GPU of its own with a fixed share of everything.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Two small-model pods, each vLLM with 45% of a 96 GB RTX PRO 6000's memory; `pods_per_gpu`
// puts them on one GPU or on one each, `sharing` is more of the fleet section.
std::string colocated_yaml(int pods_per_gpu, int concurrency, const std::string& sharing = "") {
  return "name: colocated\nseed: 5\n"
         "fleet:\n  pods: 2\n  pods_per_gpu: " +
         std::to_string(pods_per_gpu) + "\n" + sharing +
         "  gpu: RTX-PRO-6000\n  model: Qwen2.5-7B-Instruct\n"
         "  server: {gpu_memory_utilization: 0.45}\n"
         "workload:\n  type: multi_turn_chat\n  conversations: 24\n  turns: 3\n  concurrency: " +
         std::to_string(concurrency) +
         "\n  system_prompt_tokens: {dist: uniform, low: 300, high: 800}\n"
         "  question_tokens: {dist: uniform, low: 30, high: 150}\n"
         "  answer_tokens: {dist: uniform, low: 100, high: 200}\n"
         "arms:\n  - name: rr\n    policy: round_robin\n";
}

ArmSummary run_colocated(int pods_per_gpu, int concurrency, const std::string& sharing = "",
                         const std::vector<std::string>& sets = {}) {
  const RunResult r = run_scenario(
      parse_scenario(colocated_yaml(pods_per_gpu, concurrency, sharing), "colocated.yaml", sets),
      1);
  EXPECT_EQ(r.arms[0].summary.failed, 0);
  return r.arms[0].summary;
}

TEST(ColocatedPods, APodWhoseNeighbourIsIdleRunsAtItsSoloSpeed) {
  // One conversation at a time: the two pods are never busy together.
  const ArmSummary shared = run_colocated(2, 1);
  const ArmSummary alone = run_colocated(1, 1);
  EXPECT_EQ(shared.completed, alone.completed);
  EXPECT_DOUBLE_EQ(shared.ttft_ms.p50, alone.ttft_ms.p50);
  EXPECT_DOUBLE_EQ(shared.tpot_ms.p50, alone.tpot_ms.p50);
  EXPECT_DOUBLE_EQ(shared.e2e_ms.p95, alone.e2e_ms.p95);
}

TEST(ColocatedPods, TwoBusyPodsShareTheGpusTimeBothWays) {
  // Round robin over 8 streams keeps both pods decoding; sharing the GPU roughly doubles the
  // GPU part of every step. The default roofline's 1.5 ms of host work a step is not shared, so
  // a decode step of a 7B model (~6 ms solo) takes a little under twice as long.
  const ArmSummary shared = run_colocated(2, 8);
  const ArmSummary alone = run_colocated(1, 8);
  const double ratio = shared.tpot_ms.p50 / alone.tpot_ms.p50;
  EXPECT_GT(ratio, 1.5);
  EXPECT_LT(ratio, 2.0);
  EXPECT_LT(shared.throughput_req_s, alone.throughput_req_s);
  // Symmetric: both pods' requests slow alike (each pod served about half the requests at
  // about the same speed), so the slowest decodes are not twice the median's.
  EXPECT_LT(shared.tpot_ms.p95 / shared.tpot_ms.p50, 1.5);
}

const std::string kMps = "  gpu_sharing: mps\n";
const std::string kMpsUncapped = kMps + "  mps_active_thread_percentage: 100\n";
// Long prompts, one turn each: the pods' steps alternate between compute-bound prefills and
// memory-bound decodes.
const std::vector<std::string> kLongPrompts = {
    "workload.system_prompt_tokens={dist: uniform, low: 4000, high: 8000}", "workload.turns=1"};

TEST(ColocatedPods, UnderMpsAPrefillOverlapsItsNeighboursDecodes) {
  const ArmSummary sliced = run_colocated(2, 8, "", kLongPrompts);
  const ArmSummary mps = run_colocated(2, 8, kMpsUncapped, kLongPrompts);
  const ArmSummary alone = run_colocated(1, 8, "", kLongPrompts);
  // A decode step beside a prefill keeps most of the DRAM it needs instead of half the time.
  EXPECT_LT(mps.tpot_ms.p50, 0.9 * sliced.tpot_ms.p50);
  EXPECT_GT(mps.throughput_req_s, 1.05 * sliced.throughput_req_s);
  // Still one GPU's worth of compute and bandwidth: slower than a GPU each.
  EXPECT_GT(mps.tpot_ms.p50, 1.2 * alone.tpot_ms.p50);
  EXPECT_LT(mps.throughput_req_s, alone.throughput_req_s);
}

TEST(ColocatedPods, UnderMpsTwoDecodingPodsStillShareTheBandwidth) {
  // Short prompts: both pods mostly decode, which is memory-bound, so MPS gains little.
  const ArmSummary sliced = run_colocated(2, 8);
  const ArmSummary mps = run_colocated(2, 8, kMpsUncapped);
  EXPECT_LT(mps.tpot_ms.p50, sliced.tpot_ms.p50 * 1.001);
  EXPECT_GT(mps.tpot_ms.p50, 0.9 * sliced.tpot_ms.p50);
}

TEST(ColocatedPods, TheDevicePluginsSmCapHoldsALonePodsPrefills) {
  // One conversation at a time: each pod is alone on the GPU, and may use half of its SMs
  // (100 / pods_per_gpu). A prefill's arithmetic takes twice as long; alone, the step also paid
  // the part of its memory time that did not overlap, its element-wise kernels' DRAM time and
  // the host's fixed costs, none of which the cap stretches, so the first token comes 1.3 to 2
  // times later. Decodes, which need far less than half the arithmetic, do
  // not notice. The API server's intake, which no GPU share changes, is left out of both.
  const std::vector<std::string> no_intake = {"fleet.server.api_overhead_ms=0",
                                              "fleet.server.api_overhead_ms_per_1k_tokens=0"};
  const ArmSummary capped = run_colocated(2, 1, kMps, no_intake);
  const ArmSummary alone = run_colocated(1, 1, "", no_intake);
  EXPECT_GT(capped.ttft_ms.p50, 1.3 * alone.ttft_ms.p50);
  EXPECT_LT(capped.ttft_ms.p50, 2.0 * alone.ttft_ms.p50);
  EXPECT_DOUBLE_EQ(capped.tpot_ms.p50, alone.tpot_ms.p50);
  // Without the cap, MPS leaves a lone pod its solo speed.
  const ArmSummary uncapped = run_colocated(2, 1, kMpsUncapped, no_intake);
  EXPECT_DOUBLE_EQ(uncapped.ttft_ms.p50, alone.ttft_ms.p50);
  EXPECT_DOUBLE_EQ(uncapped.e2e_ms.p95, alone.e2e_ms.p95);
}

TEST(ColocatedPods, AMigInstanceRunsLikeAGpuOfItsShare) {
  // Two MIG 2g instances of an RTX PRO 6000 (half the SMs, half the memory each) against two
  // whole GPUs described with half of every figure: the same run, whatever the neighbour does.
  const std::vector<std::string> sets = {"fleet.server.gpu_memory_utilization=0.9"};
  const ArmSummary mig = run_colocated(2, 8, "  gpu_sharing: mig\n", sets);
  const std::string half =
      "  gpus:\n    - {name: half-rtx, memory_gib: 47.485, memory_bandwidth_gbs: 896, "
      "bf16_tflops: 251.9, fp8_tflops: 503.8, int8_tops: 503.8, fp4_tflops: 1007.6, "
      "host_link_gbs: 64, compute_capability: 12.0}\n";
  std::string yaml = colocated_yaml(1, 8, half);
  yaml.replace(yaml.find("gpu: RTX-PRO-6000"), 17, "gpu: half-rtx");
  const ArmSummary halves =
      run_scenario(parse_scenario(yaml, "halves.yaml", sets), 1).arms[0].summary;
  EXPECT_EQ(mig.completed, halves.completed);
  EXPECT_DOUBLE_EQ(mig.ttft_ms.p50, halves.ttft_ms.p50);
  EXPECT_DOUBLE_EQ(mig.tpot_ms.p50, halves.tpot_ms.p50);
  EXPECT_DOUBLE_EQ(mig.e2e_ms.p95, halves.e2e_ms.p95);
  // Unlike time-slicing, an idle neighbour leaves a pod no faster: one stream at a time decodes
  // at the instance's half of the bandwidth.
  const ArmSummary lone = run_colocated(2, 1, "  gpu_sharing: mig\n", sets);
  const ArmSummary whole = run_colocated(1, 1, "", sets);
  EXPECT_GT(lone.tpot_ms.p50, 1.5 * whole.tpot_ms.p50);
}

TEST(ColocatedPods, TheResultSaysHowPodsShareTheirGpu) {
  const auto fleet_of = [](const std::string& sharing) {
    const Scenario s = parse_scenario(colocated_yaml(2, 1, sharing), "colocated.yaml",
                                      {"workload.conversations=2"});
    return result_json(run_scenario(s, 1), s)["fleet"];
  };
  const nlohmann::json sliced = fleet_of("");
  EXPECT_EQ(sliced["pods_per_gpu"], 2);
  EXPECT_FALSE(sliced.contains("gpu_sharing"));
  const nlohmann::json mps = fleet_of(kMps);
  EXPECT_EQ(mps["gpu_sharing"], "mps");
  EXPECT_EQ(mps["mps_active_thread_percentage"], 50);
  const nlohmann::json mig = fleet_of("  gpu_sharing: mig\n");
  EXPECT_EQ(mig["mig_profile"], "2g, 2/4 of the memory");
}

}  // namespace
}  // namespace fleetsim
