#include "models/kv_capacity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/errors.h"

namespace fleetsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A100-80GB-PCIe + Qwen3-32B-FP8, utilization 0.9, TP 1, BF16 KV, blocks of 16, 2048 batched
// tokens, 256 sequences, by hand:
//   usable      = 79.25 GiB x 0.9                                    = 71.325 GiB
//   weights     = 31,205,621,760 FP8 linear bytes
//                 + (32.7621e9 - 31,205,621,760) BF16 params x 2     = 34,318,578,240 B = 31.962
//                 GiB
//   activations = 2048 x (3 x 25600 + 4 x 5120) x 2                  =    398,458,880 B
//                 + 256 x 151,936 x 10 (dummy sampler)              =    388,956,160 B = 0.733 GiB
//   KV          = 71.325 - 31.962 - 0.733                            = 38.63 GiB
//   blocks      = floor(41,478,642,316.8 / (262,144 x 16))           = 9,889 (158,224 tokens)
// The CUDA graphs are captured after the cache is sized (vLLM's default); with
// VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 their 0.75 GiB is set aside first:
//   KV          = 38.63 - 0.75                                       = 37.88 GiB, 9,697 blocks
TEST(KvCapacity, A100PcieQwen3_32bFp8ByHand) {
  const KvCapacity cap = compute_kv_capacity(find_gpu("A100-80GB-PCIe"),
                                             find_model("Qwen3-32B-FP8"), 0.9, 1, 2, 16, 2048);
  EXPECT_NEAR(cap.total_bytes / kGiB, 79.25, 1e-9);
  EXPECT_NEAR(cap.usable_bytes / kGiB, 71.325, 1e-9);
  EXPECT_NEAR(cap.weight_bytes, 34'318'578'240.0, 1.0);
  EXPECT_NEAR(cap.activation_bytes, 787'415'040.0, 1e-3);
  EXPECT_EQ(cap.cuda_graph_bytes, 0.0);
  EXPECT_NEAR(cap.kv_bytes, 41'478'642'316.8, 1.0);
  EXPECT_NEAR(cap.kv_bytes / kGiB, 38.63, 0.005);
  EXPECT_EQ(cap.bytes_per_token, 262'144);
  EXPECT_EQ(cap.num_blocks, 9'889);
  const KvCapacity estimated = compute_kv_capacity(
      find_gpu("A100-80GB-PCIe"), find_model("Qwen3-32B-FP8"), 0.9, 1, 2, 16, 2048, 256, true);
  EXPECT_NEAR(estimated.cuda_graph_bytes / kGiB, 0.75, 1e-12);
  EXPECT_NEAR(estimated.kv_bytes, 40'673'335'948.8, 1.0);
  EXPECT_EQ(estimated.num_blocks, 9'697);
}

TEST(KvCapacity, TensorParallelSplitsWeightsAndKv) {
  const GpuSpec& gpu = find_gpu("A100-80GB-SXM");
  const LlmSpec& llm = find_model("Llama-3.1-70B");
  const KvCapacity tp4 = compute_kv_capacity(gpu, llm, 0.9, 4, 2, 16, 2048);
  EXPECT_NEAR(tp4.weight_bytes, llm.weight_bytes_total() / 4, 1.0);
  EXPECT_EQ(tp4.bytes_per_token, 327'680 / 4);
  const KvCapacity tp8 = compute_kv_capacity(gpu, llm, 0.9, 8, 2, 16, 2048);
  EXPECT_GT(tp8.num_blocks, tp4.num_blocks);
}

TEST(KvCapacity, AnMoeForwardHoldsEachChosenExpertsActivations) {
  // Qwen3-30B-A3B at 2,048 tokens: k (3 I_moe + H) + 4 H = 8 x (2,304 + 2,048) + 8,192 = 43,008
  // BF16 values a token, whatever its unused dense intermediate_size.
  LlmSpec m = find_model("Qwen3-30B-A3B");
  const double sampler = 256.0 * 151936 * (2 + 4 + 4);  // logits, their FP32 copy, probabilities
  EXPECT_NEAR(profiling_activation_bytes(m, 1, 2048, 256) - sampler, 2048.0 * 43008 * 2, 1);
  m.intermediate_size = 0;
  EXPECT_NEAR(profiling_activation_bytes(m, 1, 2048, 256) - sampler, 2048.0 * 43008 * 2, 1);
}

// vLLM's hybrid KV cache manager: groups of equal size, a block id a page in each layer of a
// group, a sliding group's blocks capped at its window (kv_cache_utils.py, the design doc's
// Gemma 3 example: 10 full and 52 sliding layers, groups of 10).
TEST(KvCapacity, SlidingWindowLayersShareThePoolInGroupsOfEqualSize) {
  const LlmSpec& oss = find_model("gpt-oss-120b");
  std::int32_t size = 0;
  const SlidingWindowBlocks s = sliding_window_blocks(oss, 16, &size);
  EXPECT_EQ(size, 18);
  EXPECT_EQ(s.full_groups, 1);
  EXPECT_EQ(s.groups, 1);
  EXPECT_EQ(s.window_blocks, 9);  // ceil(127 / 16) + 1
  EXPECT_EQ(s.window_tokens, 128);
  const KvCapacity cap = compute_kv_capacity(find_gpu("H200"), oss, 0.9, 1, 2, 16, 8192);
  EXPECT_EQ(cap.bytes_per_token, 2 * 8 * 64 * 2 * 18);  // the full layers' half of the KV
  EXPECT_EQ(cap.sliding.window_blocks, 9);

  LlmSpec gemma = oss;  // Gemma 3 27B's layer counts and window
  gemma.layers = 62;
  gemma.sliding_layers = 52;
  gemma.sliding_window = 1024;
  const SlidingWindowBlocks g = sliding_window_blocks(gemma, 16, &size);
  EXPECT_EQ(size, 10);
  EXPECT_EQ(g.full_groups, 1);
  EXPECT_EQ(g.groups, 6);
  EXPECT_EQ(g.window_blocks, 65);
  // Counts within 1.5 of each other take the larger as the size (vLLM's gpt-oss-20b with an
  // EAGLE layer: 12 sliding, 13 full, one group each padded to 13).
  gemma.layers = 25;
  gemma.sliding_layers = 12;
  const SlidingWindowBlocks e = sliding_window_blocks(gemma, 16, &size);
  EXPECT_EQ(size, 13);
  EXPECT_EQ(e.full_groups, 1);
  EXPECT_EQ(e.groups, 1);
  // Without sliding layers: one group of every layer, as before.
  EXPECT_EQ(sliding_window_blocks(find_model("Qwen3-32B"), 16, &size).groups, 0);
  EXPECT_EQ(size, 64);
}

// vllm/platforms/cuda.py: FlashMLA on Hopper, FlashInfer or CUTLASS MLA on B200.
TEST(KvCapacity, LatentAttentionKernelsImposeTheirBlockSize) {
  const LlmSpec& ds = find_model("DeepSeek-V3");
  EXPECT_EQ(attention_block_size(find_gpu("H200"), ds, 16), 64);
  EXPECT_EQ(attention_block_size(find_gpu("H100-SXM"), ds, 128), 128);  // a multiple of 64 stays
  EXPECT_EQ(attention_block_size(find_gpu("B200"), ds, 16), 64);
  EXPECT_EQ(attention_block_size(find_gpu("B200"), ds, 32), 32);
  LlmSpec narrow = ds;  // FlashInfer's MLA wants qk_nope 128; CUTLASS takes the others
  narrow.qk_nope_head_dim = 64;
  EXPECT_EQ(attention_block_size(find_gpu("B200"), narrow, 16), 128);
  EXPECT_EQ(attention_block_size(find_gpu("A100-80GB-SXM"), ds, 16), 16);
  EXPECT_EQ(attention_block_size(find_gpu("RTX-PRO-6000"), ds, 16), 16);
  GpuSpec unknown = find_gpu("H200");
  unknown.compute_capability = 0;
  EXPECT_EQ(attention_block_size(unknown, ds, 16), 16);
  EXPECT_EQ(attention_block_size(find_gpu("H200"), find_model("Qwen3-32B"), 16), 16);
}

// vLLM pads an MXFP4 checkpoint's experts for its MoE kernel; the loads vLLM logged for
// gpt-oss-120b on one H100: 65.97 GiB through Marlin (vllm-project/vllm#23278, without
// triton_kernels, the padding an A100 gets) and 64.38 GiB through triton_kernels (#33155).
TEST(KvCapacity, Mxfp4ExpertsLoadPaddedForTheKernelTheGpuRuns) {
  const LlmSpec& oss = find_model("gpt-oss-120b");
  const double checkpoint = oss.weight_bytes_total();
  EXPECT_NEAR(checkpoint / kGiB, 60.8, 0.1);
  EXPECT_NEAR(loaded_weight_bytes(find_gpu("A100-80GB-SXM"), oss, 1) / kGiB, 65.97, 0.2);
  EXPECT_NEAR(loaded_weight_bytes(find_gpu("H100-SXM"), oss, 1) / kGiB, 64.38, 0.3);
  // Marlin's width multiple of 128 costs more once tensor parallelism halves 2,880 to 1,440.
  const double tp2 = loaded_weight_bytes(find_gpu("A100-80GB-SXM"), oss, 2);
  const double tp2_ep = loaded_weight_bytes(find_gpu("A100-80GB-SXM"), oss, 2, true);
  EXPECT_GT(tp2, tp2_ep);
  EXPECT_GT(tp2_ep, checkpoint / 2);
  // Nothing to pad: other formats, and a GPU whose kernels are unknown.
  GpuSpec unknown = find_gpu("H100-SXM");
  unknown.compute_capability = 0;
  EXPECT_DOUBLE_EQ(loaded_weight_bytes(unknown, oss, 1), checkpoint);
  const LlmSpec& dense = find_model("Qwen3-32B");
  EXPECT_DOUBLE_EQ(loaded_weight_bytes(find_gpu("A100-80GB-SXM"), dense, 1),
                   dense.weight_bytes_total());
  // The KV cache gets what the padding leaves.
  const KvCapacity padded = compute_kv_capacity(find_gpu("H100-SXM"), oss, 0.9, 1, 2, 16, 8192);
  const KvCapacity plain = compute_kv_capacity(unknown, oss, 0.9, 1, 2, 16, 8192);
  EXPECT_NEAR(plain.kv_bytes - padded.kv_bytes, (64.38 - 60.8) * kGiB, 0.3 * kGiB);
  // So vLLM refuses gpt-oss-120b's full context on one H100 (vllm-project/vllm#27508, "can't run
  // on H100"), at its defaults (0.9, 8,192 tokens and 1,024 sequences a step), and serves 32,768
  // as GPUStack does; with the checkpoint's size the full context would have fitted.
  const GpuSpec& h100 = find_gpu("H100-SXM");
  const KvCapacity defaults = compute_kv_capacity(h100, oss, 0.9, 1, 2, 16, 8192, 1024);
  EXPECT_THROW(check_room_for_max_model_len(defaults, h100, oss, 1, 16, 131072, 8192),
               ScenarioError);
  EXPECT_NO_THROW(check_room_for_max_model_len(defaults, h100, oss, 1, 16, 32768, 8192));
  const KvCapacity unpadded = compute_kv_capacity(unknown, oss, 0.9, 1, 2, 16, 8192, 1024);
  EXPECT_NO_THROW(check_room_for_max_model_len(unpadded, unknown, oss, 1, 16, 131072, 8192));
}

TEST(KvCapacity, MoreUtilizationMoreBlocks) {
  const GpuSpec& gpu = find_gpu("H100-SXM");
  const LlmSpec& llm = find_model("Llama-3.1-8B");
  const KvCapacity a = compute_kv_capacity(gpu, llm, 0.90, 1, 2, 16, 8192);
  const KvCapacity b = compute_kv_capacity(gpu, llm, 0.92, 1, 2, 16, 8192);
  EXPECT_NEAR(b.kv_bytes - a.kv_bytes, 0.02 * gpu.memory_gib * kGiB, 1.0);
  EXPECT_GT(b.num_blocks, a.num_blocks);
  // A larger token budget means a larger profiling pass, so less KV.
  const KvCapacity c = compute_kv_capacity(gpu, llm, 0.90, 1, 2, 16, 16384);
  EXPECT_LT(c.kv_bytes, a.kv_bytes);
}

TEST(KvCapacity, ModelThatDoesNotFitThrowsScenarioError) {
  try {
    compute_kv_capacity(find_gpu("A100-80GB-PCIe"), find_model("Qwen2.5-72B-Instruct"), 0.9, 1, 2,
                        16, 2048);
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("A100-80GB-PCIe"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Qwen2.5-72B-Instruct"), std::string::npos) << msg;
    EXPECT_NE(msg.find("weights 135.43 GiB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("usable 71.33 GiB"), std::string::npos) << msg;
  }
  // The FP8 checkpoint (70.0 GiB of weights) leaves one 80 GB GPU under 100 blocks (a 32K-token
  // request does not fit them: the runner refuses it, check_room_for_max_model_len), none once
  // the CUDA graphs are set aside first; an H200 holds it.
  const LlmSpec& fp8 = find_model("Qwen2.5-72B-Instruct-FP8-dynamic");
  EXPECT_LT(compute_kv_capacity(find_gpu("A100-80GB-SXM"), fp8, 0.9, 1, 2, 16, 2048).num_blocks,
            100);
  EXPECT_THROW(compute_kv_capacity(find_gpu("A100-80GB-SXM"), fp8, 0.9, 1, 2, 16, 2048, 256, true),
               ScenarioError);
  EXPECT_GT(compute_kv_capacity(find_gpu("H200"), find_model("Qwen2.5-72B-Instruct-FP8-dynamic"),
                                0.9, 1, 2, 16, 8192)
                .num_blocks,
            0);
}

// vLLM's startup check (kv_cache_interface.py, max_memory_usage_bytes), by hand:
//  - Qwen3-32B-FP8, 40,960 tokens: 2,560 pages of 16 tokens x 256 KiB = 10 GiB;
//  - gpt-oss-120b, 131,072 tokens, 8,192 batched: a page of one group is 18 layers x 2 x 8 KV
//    heads x 64 x 2 bytes x 16 tokens = 589,824 bytes; the full group pages all 8,192 blocks,
//    the sliding group ceil((127 + 8,192) / 16) + 1 = 521: 8,713 x 589,824 = 5,139,136,512.
TEST(KvCapacity, OneRequestOfMaxModelLenNeedsWhatVllmSumsOverItsLayers) {
  const LlmSpec& qwen = find_model("Qwen3-32B-FP8");
  const KvCapacity a = compute_kv_capacity(find_gpu("A100-80GB-PCIe"), qwen, 0.9, 1, 2, 16, 2048);
  EXPECT_DOUBLE_EQ(kv_bytes_for_request(a, qwen, 16, 40960, 2048), 10.0 * kGiB);
  EXPECT_DOUBLE_EQ(kv_bytes_for_request(a, qwen, 16, 40961, 2048), 10.0 * kGiB + 4 * 1048576.0);
  EXPECT_NO_THROW(
      check_room_for_max_model_len(a, find_gpu("A100-80GB-PCIe"), qwen, 1, 16, 40960, 2048));
  const LlmSpec& oss = find_model("gpt-oss-120b");
  const KvCapacity b = compute_kv_capacity(find_gpu("H200"), oss, 0.9, 1, 2, 16, 8192);
  EXPECT_DOUBLE_EQ(kv_bytes_for_request(b, oss, 16, 131072, 8192), 5'139'136'512.0);
}

TEST(KvCapacity, AMaxModelLenTheCacheCannotHoldNamesTheLongestThatFits) {
  const GpuSpec& gpu = find_gpu("L40S");
  const LlmSpec& qwen = find_model("Qwen3-32B-FP8");
  const KvCapacity cap = compute_kv_capacity(gpu, qwen, 0.9, 1, 2, 16, 2048);
  ASSERT_LT(cap.kv_bytes, 10.0 * kGiB);
  // Whole 4 MiB pages of 16 tokens.
  const auto longest = static_cast<std::int32_t>(std::floor(cap.kv_bytes / 4194304.0)) * 16;
  try {
    check_room_for_max_model_len(cap, gpu, qwen, 1, 16, 40960, 2048);
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the longest that fits is " + std::to_string(longest) + " tokens"),
              std::string::npos)
        << msg;
  }
  EXPECT_NO_THROW(check_room_for_max_model_len(cap, gpu, qwen, 1, 16, longest, 2048));
  EXPECT_THROW(check_room_for_max_model_len(cap, gpu, qwen, 1, 16, longest + 1, 2048),
               ScenarioError);
  EXPECT_NO_THROW(check_room_for_max_model_len(cap, gpu, qwen, 1, 16, 0, 2048));  // no limit
}

TEST(KvCapacity, BadArgumentsThrowScenarioError) {
  const GpuSpec& gpu = find_gpu("L40S");
  const LlmSpec& llm = find_model("Qwen2.5-7B-Instruct");
  EXPECT_THROW(compute_kv_capacity(gpu, llm, 0.0, 1, 2, 16, 2048), ScenarioError);
  EXPECT_THROW(compute_kv_capacity(gpu, llm, 1.5, 1, 2, 16, 2048), ScenarioError);
  EXPECT_THROW(compute_kv_capacity(gpu, llm, 0.9, 0, 2, 16, 2048), ScenarioError);
  EXPECT_THROW(compute_kv_capacity(gpu, llm, 0.9, 1, 2, 0, 2048), ScenarioError);
  EXPECT_THROW(compute_kv_capacity(gpu, llm, 0.9, 1, 2, 16, 0), ScenarioError);
  EXPECT_GT(compute_kv_capacity(gpu, llm, 0.9, 1, 2, 16, 2048).num_blocks, 0);
}

}  // namespace
}  // namespace fleetsim
