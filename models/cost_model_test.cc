#include "models/cost_model.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "models/kv_capacity.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

RooflineCostModel roofline(const std::string& gpu, const std::string& model, int tp = 1) {
  return RooflineCostModel(find_gpu(gpu), find_model(model), tp);
}

TEST(RooflineCostModel, DecodeOfOneIsWeightStreamingPlusOverhead) {
  const RooflineCostModel m = roofline("A100-80GB-SXM", "Llama-3.1-8B");
  // Weights streamed per step: 16.06 GB of BF16 minus the 1.05 GB embedding table (gathered,
  // not streamed) = 15.01 GB; KV of 1000 context tokens + 1 new at 131,072 B each.
  const double weights = 16.0606e9 - 128256.0 * 4096 * 2;
  EXPECT_NEAR(m.weight_bytes_per_step(), weights, 1e6);
  const std::vector<BatchEntry> batch = {{1, 1000}};
  const double bytes = weights + 1001.0 * 131072;
  // 32 layers x 4 linear kernels x 4.2 us of fixed kernel time.
  const double floor_ms = 32 * 4 * 4.2e-3;
  const auto b = m.breakdown(batch);
  EXPECT_NEAR(b.kernel_floor_ms, floor_ms, 1e-12);
  EXPECT_GT(b.memory_ms, 10 * b.compute_ms);  // deep in the memory-bound regime
  // ~ 9.52 + 0.54 + 1.5 at the A100's 0.78 of peak bandwidth, and 0.62 of the little
  // arithmetic that does not overlap the streaming; the token's activations through the
  // element-wise kernels add 5.6 us.
  const double elementwise_ms = 5'505'024.0 / (0.48 * 2039e9) * 1e3;
  EXPECT_NEAR(b.elementwise_ms, elementwise_ms, 1e-12);
  const double expected_ms = bytes / (0.78 * 2039e9) * 1e3 + floor_ms + 1.5 + elementwise_ms;
  EXPECT_NEAR(b.total_ms, expected_ms + 0.62 * b.compute_ms, 1e-9);
  EXPECT_NEAR(b.total_ms, 11.61, 0.05);
  EXPECT_EQ(b.allreduce_ms, 0.0);
  EXPECT_EQ(m.step_time(batch), ms_to_ns(b.total_ms));
}

TEST(RooflineCostModel, LargePrefillIsComputeBound) {
  const RooflineCostModel m = roofline("A100-80GB-SXM", "Llama-3.1-8B");
  const std::vector<BatchEntry> batch = {{8192, 0}};
  const auto b = m.breakdown(batch);
  // 2 x 6.979e9 x 8192 linear FLOPs + 2 x 32 x 32 x 128 x 8192^2 attention + one logits row.
  const double flops = 2 * 6'979'321'856.0 * 8192 + 262'144.0 * 8192 * 8192 + 2.0 * 128256 * 4096;
  EXPECT_NEAR(b.flops, flops, 1e6);
  EXPECT_GT(b.compute_ms, 3 * b.memory_ms);
  EXPECT_NEAR(b.total_ms,
              flops / (0.73 * 312e12) * 1e3 + 0.62 * b.memory_ms + 1.5 +
                  8192 * 5'505'024.0 / (0.48 * 2039e9) * 1e3,
              1e-6);
  // The Vidur profile puts the linear layers alone at 32 x 15.6 ms = 498 ms for 8192 tokens.
  EXPECT_NEAR(2 * 6'979'321'856.0 * 8192 / (0.73 * 312e12) * 1e3, 498, 15);
}

TEST(RooflineCostModel, GpuDemandSaysWhatBoundsTheStep) {
  const RooflineCostModel m = roofline("A100-80GB-SXM", "Llama-3.1-8B");
  const std::vector<BatchEntry> decode = {{1, 1000}};
  const auto d = m.breakdown(decode);
  const GpuDemand dd = m.gpu_demand(decode);
  // Memory-bound: DRAM busy all but the unoverlapped part of the arithmetic, the element-wise
  // kernels' time included.
  EXPECT_NEAR(d.gpu_ms, d.memory_ms + 0.62 * d.compute_ms + d.elementwise_ms, 1e-12);
  EXPECT_NEAR(dd.memory, (d.memory_ms + d.elementwise_ms) / d.gpu_ms, 1e-12);
  EXPECT_GT(dd.memory, 0.99);
  EXPECT_NEAR(dd.compute, d.compute_ms / d.gpu_ms, 1e-12);
  EXPECT_LT(dd.compute, 0.1);
  const std::vector<BatchEntry> prefill = {{8192, 0}};
  const auto p = m.breakdown(prefill);
  const GpuDemand pd = m.gpu_demand(prefill);
  EXPECT_NEAR(pd.compute, p.compute_ms / p.gpu_ms, 1e-12);
  // Compute-bound but for the element-wise kernels (about 9% of the step), which keep DRAM busy.
  EXPECT_GT(pd.compute, 0.9);
  EXPECT_NEAR(pd.memory, (p.memory_ms + p.elementwise_ms) / p.gpu_ms, 1e-12);
  // At TP 2 the all-reduces take part of the GPU time and keep neither busy.
  const RooflineCostModel tp2 = roofline("A100-80GB-SXM", "Llama-3.1-8B", 2);
  const auto t = tp2.breakdown(prefill);
  ASSERT_GT(t.allreduce_ms, 0.0);
  EXPECT_NEAR(tp2.gpu_demand(prefill).compute, t.compute_ms / (t.gpu_ms + t.allreduce_ms), 1e-12);
  EXPECT_TRUE(m.knows_gpu_demand());
  EXPECT_FALSE(FittedCostModel({}).knows_gpu_demand());
  EXPECT_DOUBLE_EQ(FittedCostModel({}).gpu_demand(prefill).compute, 1.0);
}

TEST(RooflineCostModel, AnMoeStepReadsOnlyTheExpertsItsTokensWereRoutedTo) {
  const RooflineCostModel m = roofline("H100-SXM", "Qwen3-30B-A3B-FP8");
  const LlmSpec& llm = find_model("Qwen3-30B-A3B-FP8");
  const double expert_bytes = llm.expert_params() * 1;  // FP8
  const double all = llm.weight_bytes_total() - llm.embedding_params() * 2;
  const double experts_all = 128 * expert_bytes * 48;
  // One token: 8 of 128 experts a layer. Two: 128 (1 - (120/128)^2) = 15.5 on average.
  EXPECT_NEAR(m.weight_bytes_per_step(1), all - experts_all + 8 * expert_bytes * 48, 1);
  EXPECT_NEAR(m.weight_bytes_per_step(2), all - experts_all + 15.5 * expert_bytes * 48, 1);
  // A few hundred tokens touch nearly every expert.
  EXPECT_NEAR(m.weight_bytes_per_step(512) / all, 1.0, 1e-6);
  for (double t = 1; t < 300; t *= 2) {
    EXPECT_LT(m.weight_bytes_per_step(t), m.weight_bytes_per_step(2 * t));
  }
  // FLOPs count only the chosen experts: a 3B-active model decodes a token far cheaper than a
  // dense 32B one, but a batch of 64 streams almost all 30B of its weights.
  const RooflineCostModel dense = roofline("H100-SXM", "Qwen3-32B-FP8");
  const std::vector<BatchEntry> one = {{1, 1000}};
  EXPECT_LT(m.breakdown(one).total_ms, 0.5 * dense.breakdown(one).total_ms);
  std::vector<BatchEntry> batch(64, BatchEntry{1, 1000});
  EXPECT_GT(m.breakdown(batch).bytes, 0.9 * all);
  const std::vector<BatchEntry> prefill = {{4096, 0}};
  EXPECT_LT(m.breakdown(prefill).flops, 0.15 * dense.breakdown(prefill).flops);
}

TEST(RooflineCostModel, Fp8OnA100MovesHalfTheBytesButComputesAtBf16) {
  const RooflineCostModel bf16 = roofline("A100-80GB-PCIe", "Qwen3-32B");
  const RooflineCostModel fp8 = roofline("A100-80GB-PCIe", "Qwen3-32B-FP8");
  EXPECT_DOUBLE_EQ(fp8.linear_peak_tflops(), 312);
  EXPECT_DOUBLE_EQ(bf16.linear_peak_tflops(), 312);
  // Linear weights are halved exactly; lm_head stays BF16, so the ratio is a little over 1/2.
  const double ratio = fp8.weight_bytes_per_step() / bf16.weight_bytes_per_step();
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.52);
  const std::vector<BatchEntry> decode = {{1, 500}};
  EXPECT_LT(fp8.breakdown(decode).memory_ms, 0.53 * bf16.breakdown(decode).memory_ms);
  // Same FLOPs at the same peak, but the linear layers dequantize inside the GEMM, which runs
  // at 0.62 of a BF16 GEMM once compute-bound; attention and logits are unchanged.
  EXPECT_TRUE(fp8.dequantizes_weights());
  EXPECT_FALSE(bf16.dequantizes_weights());
  const std::vector<BatchEntry> prefill = {{4096, 0}};
  const auto f = fp8.breakdown(prefill);
  const auto b = bf16.breakdown(prefill);
  EXPECT_DOUBLE_EQ(f.flops, b.flops);
  const double linear_bf16_ms = 2.0 * find_model("Qwen3-32B").active_params() * 4096 /
                                (kDefaultComputeEfficiency * 312e12) * 1e3;
  EXPECT_NEAR(f.compute_ms - b.compute_ms, linear_bf16_ms * (1 / kDefaultDequantGemmFactor - 1),
              1e-6);
  // A single decode stays memory-bound: dequantization costs nothing there.
  EXPECT_GT(fp8.breakdown(decode).memory_ms, 10 * fp8.breakdown(decode).compute_ms);
  EXPECT_NE(fp8.describe().find("dequantized in the GEMM"), std::string::npos);
}

// Llama-3.1-70B stored as `d`.
LlmSpec llama70b_as(WeightDtype d) {
  LlmSpec m = find_model("Llama-3.1-70B");
  m.weight_dtype = d;
  return m;
}

RooflineCostModel roofline(const std::string& gpu, const LlmSpec& m) {
  return RooflineCostModel(find_gpu(gpu), m, 1);
}

TEST(RooflineCostModel, FourBitWeightsStreamAQuarterAndComputeWhereTheGpuCan) {
  const RooflineCostModel bf16 = roofline("A100-80GB-SXM", llama70b_as(WeightDtype::kBf16));
  const RooflineCostModel int4 = roofline("A100-80GB-SXM", llama70b_as(WeightDtype::kInt4));
  // 4 bits plus a group-128 FP16 scale and 4-bit zero: 4.156 of 16 bits; lm_head stays BF16.
  const double ratio = int4.weight_bytes_per_step() / bf16.weight_bytes_per_step();
  EXPECT_GT(ratio, 4.15 / 16);
  EXPECT_LT(ratio, 0.28);
  const std::vector<BatchEntry> decode = {{1, 500}};
  EXPECT_LT(int4.breakdown(decode).total_ms, 0.35 * bf16.breakdown(decode).total_ms);
  // AWQ/GPTQ run W4A16 on every GPU: Marlin dequantizes inside a BF16 GEMM.
  EXPECT_TRUE(int4.dequantizes_weights());
  EXPECT_DOUBLE_EQ(int4.linear_peak_tflops(), 312);
  EXPECT_TRUE(roofline("B200", llama70b_as(WeightDtype::kInt4)).dequantizes_weights());
  EXPECT_NE(int4.describe().find("int4 weights dequantized"), std::string::npos);
  // NVFP4 runs on FP4 tensor cores on Blackwell, and through Marlin before it.
  const RooflineCostModel b200 = roofline("B200", llama70b_as(WeightDtype::kFp4));
  EXPECT_FALSE(b200.dequantizes_weights());
  EXPECT_DOUBLE_EQ(b200.linear_peak_tflops(), 9000);
  EXPECT_DOUBLE_EQ(roofline("RTX-PRO-6000", llama70b_as(WeightDtype::kFp4)).linear_peak_tflops(),
                   2015.2);
  EXPECT_TRUE(roofline("H100-SXM", llama70b_as(WeightDtype::kFp4)).dequantizes_weights());
  // INT8 W8A8 uses the INT8 tensor cores, Ampere's included.
  const RooflineCostModel int8 = roofline("A100-80GB-SXM", llama70b_as(WeightDtype::kInt8));
  EXPECT_FALSE(int8.dequantizes_weights());
  EXPECT_DOUBLE_EQ(int8.linear_peak_tflops(), 624);
  const std::vector<BatchEntry> prefill = {{4096, 0}};
  EXPECT_LT(int8.breakdown(prefill).compute_ms, 0.6 * bf16.breakdown(prefill).compute_ms);
  // Fewer weight bytes leave more of the GPU to the KV cache.
  EXPECT_LT(llama70b_as(WeightDtype::kInt4).weight_bytes_total(),
            0.3 * llama70b_as(WeightDtype::kBf16).weight_bytes_total());
}

TEST(RooflineCostModel, LatentAttentionReadsOneWholeLatentAndDecodesInItsSpace) {
  const LlmSpec& ds = find_model("DeepSeek-V3");
  const RooflineCostModel tp8 = roofline("H200", "DeepSeek-V3", 8);
  // The query and KV down-projections are replicated on every rank (ReplicatedLinear).
  const double rep = 61.0 * 7168 * (1536 + 512 + 64);
  EXPECT_DOUBLE_EQ(ds.replicated_params(), rep);
  // Every rank reads the whole 576-wide latent of every context token (MLA is MQA in decode).
  const auto decode = tp8.breakdown(std::vector<BatchEntry>{{1, 10000}});
  const double kv = 61.0 * 576 * 2;
  EXPECT_NEAR(decode.bytes - tp8.weight_bytes_per_step(1), kv * 10001, 1);
  EXPECT_NEAR(tp8.weight_bytes_per_step(1) -
                  roofline("H200", "DeepSeek-V3", 4).weight_bytes_per_step(1) / 2,
              rep / 2, 1e3);  // FP8: a byte each, half of them not halved
  // Decode attention in the latent space: QK over 512 + 64, PV over 512, for 128 heads split
  // over 8 ranks; a prefill decompresses to 192-wide keys and 128-wide values instead.
  const double linear =
      2.0 * ((ds.active_params() - rep) / 8 + rep) + 2.0 * ds.embedding_params() / 8;
  const auto padding = [&](double tokens) {
    return 2.0 * (tp8.moe_padded_rows(tokens) - tokens * 8) * ds.expert_params() * 58 / 8;
  };
  EXPECT_NEAR(decode.flops - linear - padding(1), 2.0 * 128 * (576 + 512) * 61 * 10000.5 / 8, 1e3);
  const auto prefill = tp8.breakdown(std::vector<BatchEntry>{{100, 0}});
  EXPECT_NEAR(prefill.flops - linear * 100 + 2.0 * ds.embedding_params() / 8 * 99 - padding(100),
              2.0 * 128 * (192 + 128) * 61 * (100 * 50.0) / 8, 1e3);
  // A decode verifying 3 speculative drafts stays on the decode path: latent-space attention,
  // nothing re-expanded.
  BatchEntry verify{4, 10000};
  verify.verifies_drafts = true;
  const double linear4 = linear * 4;  // logits at each of the 4 positions it verifies
  EXPECT_NEAR(tp8.breakdown(std::vector<BatchEntry>{verify}).flops - linear4 - padding(4),
              2.0 * 128 * (576 + 512) * 61 * (4 * 10002.0) / 8, 1e3);
  // A prefill that finds 1,000 tokens cached re-expands their latent through kv_b_proj.
  const auto warm = tp8.breakdown(std::vector<BatchEntry>{{100, 1000}});
  EXPECT_NEAR(warm.flops - prefill.flops,
              2.0 * 128 * (192 + 128) * 61 * 100 * 1000 / 8 +
                  2.0 * ds.kv_up_projection_params() * 61 * 1000 / 8,
              1e3);
}

TEST(RooflineCostModel, SlidingLayersAttendAndReadWithinTheirWindow) {
  const RooflineCostModel m = roofline("H100-SXM", "gpt-oss-120b");
  const LlmSpec& oss = find_model("gpt-oss-120b");
  const auto at = [&](std::int32_t context) {
    return m.breakdown(std::vector<BatchEntry>{{1, context}});
  };
  // 18 full layers read every context token, 18 sliding ones the last 128: 2 KV heads x 8 x 64
  // x 2 bytes a layer.
  const double kv_layer = 2.0 * 8 * 64 * 2;
  EXPECT_NEAR(at(10000).bytes - at(100).bytes, kv_layer * (18 * 9900 + 18 * (128 - 100)), 1);
  // The new token's query sees 100.5 keys on average at 100 (it is half its own key), 128 at
  // 10,000 on a sliding layer.
  const double per_pair = 2.0 * 64 * (64 + 64);
  EXPECT_NEAR(at(10000).flops - at(100).flops, per_pair * (18 * 9900 + 18 * 27.5), 1);
  // A prefill of 1,000 fresh tokens: full layers see the causal triangle, sliding ones at most
  // 128 keys: 128^2 / 2 + 872 x 128 pairs.
  const auto prefill = m.breakdown(std::vector<BatchEntry>{{1000, 0}});
  const double linear = 2.0 * oss.active_params() * 1000 + 2.0 * oss.embedding_params() +
                        2.0 * (m.moe_padded_rows(1000) - 4000) * oss.expert_params() * 36;
  EXPECT_NEAR(prefill.flops - linear,
              per_pair * (18 * 1000 * 500.0 + 18 * (128 * 64.0 + 872 * 128)), 1e3);
}

TEST(RooflineCostModel, ExpertOnlyMxfp4KeepsAttentionInBf16) {
  const RooflineCostModel h100 = roofline("H100-SXM", "gpt-oss-120b");
  const LlmSpec& oss = find_model("gpt-oss-120b");
  // The experts are 4.25 bits a weight, everything else 16: one token streams its 4 experts a
  // layer and all the rest but the embedding table.
  const double expert_bytes = oss.expert_params() * 36 * (4.25 / 8);
  const double bf16_bytes = (oss.params_b * 1e9 - 128 * oss.expert_params() * 36) * 2;
  EXPECT_NEAR(oss.weight_bytes_total(), 128 * expert_bytes + bf16_bytes, 1e3);
  // The experts stream as vLLM padded them for the H100's kernel: the hidden size 2,880 to 3,072.
  const double padding = expert_padding_factor(find_gpu("H100-SXM"), oss, 1);
  EXPECT_NEAR(padding, 3072.0 / 2880.0, 0.002);
  EXPECT_NEAR(h100.weight_bytes_per_step(1),
              4 * expert_bytes * padding + bf16_bytes - oss.embedding_params() * 2, 1e3);
  // W4A16 by default everywhere (Blackwell included), at the dequantizing GEMMs' speed and, being
  // experts, at the fused-MoE factor of it; the BF16 attention at the dense efficiency.
  EXPECT_TRUE(h100.dequantizes_weights());
  EXPECT_TRUE(roofline("B200", "gpt-oss-120b").dequantizes_weights());
  const auto p = h100.breakdown(std::vector<BatchEntry>{{4096, 0}});
  // The experts' padding rows (20,416 computed for 16,384 routed; see below) at their speed.
  const double quantized =
      2.0 * oss.active_quantized_params() * 4096 + 2.0 * (20416 - 16384) * oss.expert_params() * 36;
  const double bf16 = p.flops - quantized;
  EXPECT_NEAR(p.compute_ms,
              (quantized / (0.73 * 0.62 * 0.55 * 989.4e12) + bf16 / (0.73 * 989.4e12)) * 1e3, 1e-6);
}

TEST(RooflineCostModel, ExpertRowsArePaddedToTheFusedMoeBlock) {
  // gpt-oss-120b routes each token to 4 of 128 experts. The block is the power of two of the
  // rows per expert, between 16 and 64.
  const RooflineCostModel m = roofline("H100-SXM", "gpt-oss-120b");
  // One token: 4 experts of one 16-row block each.
  EXPECT_DOUBLE_EQ(m.moe_padded_rows(1), 4 * 16);
  // 100 tokens touch 128 (1 - (31/32)^100) = 122.6 experts, each one block (400 real rows).
  EXPECT_NEAR(m.moe_padded_rows(100), 128 * (1 - std::pow(31.0 / 32, 100)) * 16, 1e-9);
  // 200 tokens, 6.25 rows an expert: still one 16-row block each.
  EXPECT_NEAR(m.moe_padded_rows(200), 128 * (1 - std::pow(31.0 / 32, 200)) * 16, 1e-9);
  // 1,024 tokens, 32 rows an expert: 32-row blocks, half a block of padding on top of each.
  EXPECT_NEAR(m.moe_padded_rows(1024), 4096 + 128 * (1 - std::pow(31.0 / 32, 1024)) * 15.5, 1e-6);
  // 4,096 tokens: 128 rows an expert on average, plus half a 64-row block of padding each.
  EXPECT_NEAR(m.moe_padded_rows(4096), 16384 + 128 * 31.5, 1e-6);
  // A dense model pads nothing, and its step time is unchanged by the rule.
  EXPECT_EQ(roofline("H100-SXM", "Qwen3-32B").moe_padded_rows(4096), 0.0);
  // The padding is computed at the experts' speed: a 4,096-token gpt-oss prefill spends 4,032
  // more rows x 36 layers in its W4A16 expert GEMMs than the routed tokens alone.
  const LlmSpec& oss = find_model("gpt-oss-120b");
  const auto p = m.breakdown(std::vector<BatchEntry>{{4096, 0}});
  const auto q = m.breakdown(std::vector<BatchEntry>{{4097, 0}});
  EXPECT_GT(q.flops - p.flops, 2.0 * oss.active_params());
  EXPECT_NEAR(p.flops - 2.0 * (oss.active_params() * 4096 + oss.embedding_params()),
              2.0 * 4032 * oss.expert_params() * 36 +
                  2.0 * 64 * (64 + 64) * (18 * 4096 * 2048.0 + 18 * (128 * 64.0 + 3968 * 128)),
              1e3);
}

TEST(RooflineCostModel, ExpertGemmsRunAtTheFusedMoeFactorOfDense) {
  // Qwen3-30B-A3B: 48 layers of 128 experts 768 wide, 8 a token. A 4,096-token prefill is
  // compute-bound; its expert GEMMs (padding rows included) take 1 / moe_gemm_factor as long as
  // dense GEMMs of the same FLOPs would, everything else is unchanged.
  const LlmSpec& m = find_model("Qwen3-30B-A3B");
  const RooflineCostModel dense_speed(find_gpu("H100-SXM"), m, 1, {.moe_gemm_factor = 1.0});
  const RooflineCostModel fused = roofline("H100-SXM", "Qwen3-30B-A3B");
  const std::vector<BatchEntry> prefill = {{4096, 0}};
  const double expert_flops =
      2.0 * dense_speed.moe_padded_rows(4096) * m.expert_params() * m.moe_layers();
  const double expert_ms_at_dense = expert_flops / (0.73 * 989.4e12) * 1e3;
  EXPECT_NEAR(fused.breakdown(prefill).compute_ms - dense_speed.breakdown(prefill).compute_ms,
              expert_ms_at_dense * (1.0 / kDefaultMoeGemmFactor - 1.0), 1e-9);
  EXPECT_DOUBLE_EQ(fused.breakdown(prefill).flops, dense_speed.breakdown(prefill).flops);
  EXPECT_THROW(RooflineCostModel(find_gpu("H100-SXM"), m, 1, {.moe_gemm_factor = 0.0}),
               ScenarioError);
  // A dense model is untouched by the factor.
  const RooflineCostModel llama(find_gpu("H100-SXM"), find_model("Llama-3.1-8B"), 1,
                                {.moe_gemm_factor = 0.1});
  EXPECT_DOUBLE_EQ(llama.breakdown(prefill).compute_ms,
                   roofline("H100-SXM", "Llama-3.1-8B").breakdown(prefill).compute_ms);
}

TEST(RooflineCostModel, AnMoeLayerAddsItsRouterSharedExpertAndRoutingKernelsToTheFloor) {
  // Besides QKV, the output projection and the two expert GEMMs, an MoE layer launches its
  // router's GEMM, its shared expert's two where it has one, and the fused-MoE block's routing
  // kernels. DeepSeek-V3: 61 layers, the first 3 dense, 58 with a shared expert.
  const LlmSpec& ds = find_model("DeepSeek-V3");
  ASSERT_EQ(ds.moe_layers(), 58);
  ASSERT_GT(ds.shared_expert_intermediate_size, 0);
  EXPECT_NEAR(roofline("H200", "DeepSeek-V3", 8).kernel_floor_ms(),
              ((4 * 61 + 3 * 58) * 4.2 + 58 * 20.0) * 1e-3, 1e-12);
  // Qwen3-30B-A3B: 48 MoE layers and no shared expert.
  EXPECT_NEAR(roofline("H100-SXM", "Qwen3-30B-A3B").kernel_floor_ms(),
              ((4 * 48 + 48) * 4.2 + 48 * 20.0) * 1e-3, 1e-12);
  EXPECT_NEAR(roofline("H100-SXM", "Qwen3-8B").kernel_floor_ms(), 4 * 36 * 4.2e-3, 1e-12);
  // A decode step of one is bound by memory, so the routing kernels add their time whole.
  const RooflineCostModel without(find_gpu("H100-SXM"), find_model("Qwen3-30B-A3B"), 1,
                                  {.moe_routing_us = 0.0});
  const std::vector<BatchEntry> decode = {{1, 1000}};
  EXPECT_NEAR(roofline("H100-SXM", "Qwen3-30B-A3B").breakdown(decode).total_ms -
                  without.breakdown(decode).total_ms,
              48 * 20.0e-3, 1e-9);
  EXPECT_THROW(RooflineCostModel(find_gpu("H100-SXM"), find_model("Qwen3-30B-A3B"), 1,
                                 {.moe_routing_us = -1.0}),
               ScenarioError);
}

TEST(RooflineCostModel, MoeRoutingTimeIsWhatTheFusedBlockTakesAtOneTokenBeyondItsBytes) {
  // vLLM's benchmark_moe.py times a whole fused-MoE block (top-k, sorting, both GEMMs,
  // activation, weighted sum) inside CUDA graphs. At one token the block streams the gate/up
  // and down weights of the k experts it touches; what it takes beyond those bytes at the GPU's
  // bandwidth efficiency and two kernel floors is the routing kernels' fixed time.
  struct Timing {
    double us, experts, width, hidden, bytes_per_weight, bandwidth_gbs, efficiency, beyond_us;
  };
  const std::vector<Timing> timings = {
      // Mixtral-8x7B at TP 2, BF16, H100 SXM, tuned (vllm-project/vllm#24700)
      {144.03, 2, 7168, 4096, 2, 3350, 0.90, 18.8},
      // Qwen3-30B-A3B, FP8 w8a8, H100 SXM, the PR's defaults (#24700)
      {40.44, 8, 768, 2048, 1, 3350, 0.90, 19.5},
      // Qwen3-235B-A22B at TP 8, FP8 w8a8, H200, untuned (sgl-project/sglang#11730)
      {31.70, 8, 192, 4096, 1, 4800, 0.90, 18.9},
      // Qwen3-30B-A3B, BF16, A100 PCIe 40GB (HBM2, 1,555 GB/s), default config (#19049)
      {109.21, 8, 768, 2048, 2, 1555, 0.78, 38.6},
  };
  double hopper = 0;
  for (const Timing& t : timings) {
    const double bytes = t.experts * 3 * t.width * t.hidden * t.bytes_per_weight;
    const double beyond =
        t.us - bytes / (t.bandwidth_gbs * 1e9 * t.efficiency) * 1e6 - 2 * kDefaultKernelFloorUs;
    EXPECT_NEAR(beyond, t.beyond_us, 0.05);
    if (t.efficiency == 0.90) hopper += beyond / 3;
  }
  // The three Hopper timings agree within a microsecond; the constant is their round figure.
  EXPECT_NEAR(kDefaultMoeRoutingUs, hopper, 1.0);
}

TEST(RooflineCostModel, Fp8ExpertsGainLittleOverBf16OnFp8TensorCores) {
  // vLLM's fused-MoE kernel runs FP8 experts 1.15x as fast as BF16 ones, the rest of the model
  // at the FP8 peak; on an A100 (Marlin W8A16) the linear peak is BF16's anyway.
  const RooflineCostModel h100 = roofline("H100-SXM", "Qwen3-30B-A3B-FP8");
  EXPECT_NEAR(h100.linear_peak_tflops(), 1978.9, 1e-9);
  EXPECT_NEAR(h100.expert_peak_tflops(), 1.15 * 989.4, 1e-9);
  EXPECT_NEAR(roofline("A100-80GB-SXM", "Qwen3-30B-A3B-FP8").expert_peak_tflops(), 312, 1e-9);
  EXPECT_NEAR(roofline("H100-SXM", "Qwen3-30B-A3B").expert_peak_tflops(), 989.4, 1e-9);
}

TEST(RooflineCostModel, DequantFactorOnlyActsWithoutNativeTensorCores) {
  // L40S has FP8 tensor cores: FP8 weights run natively there, the factor does not apply.
  const RooflineCostModel l40s = roofline("L40S", "Qwen3-32B-FP8");
  EXPECT_FALSE(l40s.dequantizes_weights());
  const RooflineCostModel slow(find_gpu("A100-80GB-PCIe"), find_model("Qwen3-32B-FP8"), 1,
                               {.dequant_gemm_factor = 0.31});
  const RooflineCostModel fast = roofline("A100-80GB-PCIe", "Qwen3-32B-FP8");
  const std::vector<BatchEntry> prefill = {{2048, 0}};
  EXPECT_GT(slow.breakdown(prefill).compute_ms, 1.9 * fast.breakdown(prefill).compute_ms);
}

TEST(RooflineCostModel, DequantizingKernelsOverlapTheirLoadsFully) {
  // cuBLAS on an L40S multiplies FP8 natively and loses 0.62 of the shorter part; Marlin on an
  // A100 dequantizes and overlaps: a plain max().
  const std::vector<BatchEntry> ridge = {{64, 0}, {1, 2000}, {1, 3000}};
  const RooflineCostModel marlin = roofline("A100-80GB-PCIe", "Qwen3-32B-FP8");
  const auto m = marlin.breakdown(ridge);
  EXPECT_EQ(marlin.unoverlapped_fraction(), 0.0);
  EXPECT_DOUBLE_EQ(m.gpu_ms, std::max(m.compute_ms, m.memory_ms) + m.elementwise_ms);
  const RooflineCostModel native = roofline("L40S", "Qwen3-32B-FP8");
  const auto n = native.breakdown(ridge);
  EXPECT_EQ(native.unoverlapped_fraction(), kDefaultUnoverlappedFraction);
  EXPECT_NEAR(n.gpu_ms,
              std::max(n.compute_ms, n.memory_ms) + 0.62 * std::min(n.compute_ms, n.memory_ms) +
                  n.elementwise_ms,
              1e-12);
  EXPECT_GT(n.gpu_ms, 1.05 * std::max(n.compute_ms, n.memory_ms) + n.elementwise_ms);
}

TEST(RooflineCostModel, Fp8OnHopperComputesAtFp8Peak) {
  const RooflineCostModel bf16 = roofline("H100-SXM", "Qwen3-32B");
  const RooflineCostModel fp8 = roofline("H100-SXM", "Qwen3-32B-FP8");
  EXPECT_NEAR(fp8.linear_peak_tflops(), 1978.9, 1e-9);
  const std::vector<BatchEntry> prefill = {{2048, 0}};
  const double r = fp8.breakdown(prefill).compute_ms / bf16.breakdown(prefill).compute_ms;
  EXPECT_GT(r, 0.5);  // attention and logits stay BF16
  EXPECT_LT(r, 0.55);
}

TEST(RooflineCostModel, TensorParallelSplitsWorkAndAddsAllReduce) {
  const RooflineCostModel tp1 = roofline("H100-SXM", "Llama-3.1-70B", 1);
  const RooflineCostModel tp4 = roofline("H100-SXM", "Llama-3.1-70B", 4);
  const std::vector<BatchEntry> batch = {{2048, 0}, {1, 3000}};
  const auto b1 = tp1.breakdown(batch);
  const auto b4 = tp4.breakdown(batch);
  EXPECT_NEAR(b4.flops, b1.flops / 4, b1.flops * 1e-12);
  EXPECT_EQ(b1.allreduce_ms, 0.0);
  // 2 all-reduces x 80 layers, each 9 us plus 2 (3/4) x 2049 tokens x 8192 x 2 B over 450 GB/s.
  const double latency = 2 * 80 * 9e-3;
  const double transfer = 2 * 80 * 1.5 * 2049.0 * 8192 * 2 / 450e9 * 1e3;
  EXPECT_NEAR(b4.allreduce_ms, latency + transfer, 1e-9);
  // A user-given link bandwidth overrides the catalog's.
  const RooflineCostModel pcie(find_gpu("H100-SXM"), find_model("Llama-3.1-70B"), 4,
                               {.allreduce_bandwidth_gbs = 45.0});
  EXPECT_NEAR(pcie.breakdown(batch).allreduce_ms, latency + 10 * transfer, 1e-9);
  // A one-token decode step's all-reduces are almost all latency: 160 x 9 us = 1.44 ms.
  const std::vector<BatchEntry> one = {{1, 1000}};
  EXPECT_NEAR(tp4.breakdown(one).allreduce_ms, 1.44, 0.01);
  const RooflineCostModel no_latency(find_gpu("H100-SXM"), find_model("Llama-3.1-70B"), 4,
                                     {.allreduce_latency_us = 1e-6});
  EXPECT_LT(no_latency.breakdown(one).allreduce_ms, 0.01);
}

TEST(RooflineCostModel, ExpectedMaximumOfNormalsIsTheKnownValue) {
  EXPECT_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1.0 / std::sqrt(std::numbers::pi), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(4), 1.029375, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(8), 1.423600, 1e-5);
}

TEST(RooflineCostModel, ExpertParallelStepsWaitForTheBusiestGpu) {
  // Qwen3-30B-A3B over four GPUs. Split (tensor parallel), each GPU reads a quarter of every
  // touched expert; spread whole (expert parallel), a one-token step's 8 experts fall on the four
  // GPUs at random and the step waits for the GPU with the most: 8/4 + 1.0294 sd of a
  // binomial(8, 1/4), 1.63 times its share.
  const LlmSpec& m = find_model("Qwen3-30B-A3B");
  const RooflineCostModel split(find_gpu("H100-SXM"), m, 4);
  const RooflineCostModel whole(find_gpu("H100-SXM"), m, 4, {.expert_parallel = true});
  const double imbalance = 1.0 + expected_max_standard_normal(4) * std::sqrt(3.0 / 8);
  EXPECT_NEAR(whole.expert_parallel_imbalance(8), imbalance, 1e-12);
  const double expert_bytes = m.expert_params() * m.bytes_per_linear_weight() * m.moe_layers();
  EXPECT_NEAR(whole.weight_bytes_per_step(1) - split.weight_bytes_per_step(1),
              (imbalance - 1.0) * 8 * expert_bytes / 4, 1.0);
  // A large step touches every expert: each GPU reads all of its own, no more than its share;
  // its 32,768 token-expert pairs spread within 1% of even.
  EXPECT_NEAR(whole.weight_bytes_per_step(4096), split.weight_bytes_per_step(4096), 1.0);
  EXPECT_LT(whole.expert_parallel_imbalance(4096 * 8), 1.01);
  const std::vector<BatchEntry> prefill = {{4096, 0}};
  EXPECT_GT(whole.breakdown(prefill).compute_ms, split.breakdown(prefill).compute_ms);
  // Nothing to spread on one GPU or in a dense model.
  EXPECT_EQ(RooflineCostModel(find_gpu("H100-SXM"), m, 1, {.expert_parallel = true})
                .expert_parallel_imbalance(8),
            1.0);
  EXPECT_EQ(
      RooflineCostModel(find_gpu("H100-SXM"), find_model("Qwen3-8B"), 4, {.expert_parallel = true})
          .weight_bytes_per_step(1),
      roofline("H100-SXM", "Qwen3-8B", 4).weight_bytes_per_step(1));
}

TEST(RooflineCostModel, MoreThanTwoPcieGpusAllReduceThroughNccl) {
  // vLLM runs its custom all-reduce over PCIe for two GPUs only; eight RTX PRO 6000s go through
  // NCCL's ring: 25 us and 20 GB/s over eight (the PCIe Gen5 link's 64 would be the custom
  // kernel's).
  const std::vector<BatchEntry> batch = {{1000, 0}};
  const double buffer = 1000.0 * 8192 * 2;
  const auto allreduce_ms = [&](const std::string& gpu, int tp, RooflineConstants k = {}) {
    return RooflineCostModel(find_gpu(gpu), find_model("Llama-3.1-70B"), tp, k)
        .breakdown(batch)
        .allreduce_ms;
  };
  const auto ring = [&](int tp, double latency_us, double gbs) {
    return 2 * 80 * (latency_us * 1e-3 + 2.0 * (tp - 1) / tp * buffer / (gbs * 1e9) * 1e3);
  };
  EXPECT_TRUE(allreduces_through_nccl_over_pcie(find_gpu("RTX-PRO-6000"), 8, AllreducePath::kP2p));
  EXPECT_NEAR(allreduce_ms("RTX-PRO-6000", 8), ring(8, 25, 20), 1e-9);
  // Over four, fewer flows share the host's memory: 30 GB/s.
  EXPECT_NEAR(allreduce_ms("RTX-PRO-6000", 4), ring(4, 25, 30), 1e-9);
  EXPECT_NEAR(allreduce_ms("RTX-PRO-6000", 2), ring(2, 9, 64), 1e-9);
  // An NVLink part keeps the custom all-reduce within its NVLink domain: eight on an HGX board,
  // a bridged pair of H100 NVLs; a measured figure overrides NCCL's.
  EXPECT_FALSE(allreduces_through_nccl_over_pcie(find_gpu("H100-SXM"), 8, AllreducePath::kP2p));
  EXPECT_FALSE(allreduces_through_nccl_over_pcie(find_gpu("H100-NVL"), 2, AllreducePath::kP2p));
  EXPECT_TRUE(allreduces_through_nccl_over_pcie(find_gpu("H100-NVL"), 4, AllreducePath::kP2p));
  EXPECT_NEAR(allreduce_ms("H100-SXM", 8), ring(8, 9, 450), 1e-9);
  EXPECT_NEAR(
      allreduce_ms("RTX-PRO-6000", 8, {.allreduce_bandwidth_gbs = 30, .allreduce_latency_us = 40}),
      ring(8, 40, 30), 1e-9);
  // Without peer to peer NCCL goes through host memory whatever the size.
  EXPECT_FALSE(
      allreduces_through_nccl_over_pcie(find_gpu("A100-80GB-PCIe"), 4, AllreducePath::kHost));
  EXPECT_NEAR(allreduce_ms("A100-80GB-PCIe", 4, {.allreduce_path = AllreducePath::kHost}),
              ring(4, 12, 6), 1e-9);
  EXPECT_NE(RooflineCostModel(find_gpu("RTX-PRO-6000"), find_model("Llama-3.1-70B"), 8)
                .describe()
                .find("NCCL over PCIe"),
            std::string::npos);
}

TEST(CostModelFactory, AllReducesWithoutPeerToPeerGoThroughHostMemory) {
  const auto tp2 = [](const std::string& yaml) {
    const Params p = cost_model_spec().resolve(YAML::Load(yaml), YamlWhere{"s.yaml", "cm"});
    const auto m =
        make_cost_model(p, find_gpu("A100-80GB-PCIe"), find_model("Qwen2.5-7B-Instruct"), 2);
    return dynamic_cast<const RooflineCostModel&>(*m).breakdown(std::vector<BatchEntry>{{100, 0}});
  };
  // 2 all-reduces x 28 layers, each a latency plus 2 (1/2) x 100 tokens x 3584 x 2 B.
  const double bytes = 100.0 * 3584 * 2;
  const double layers = 2 * 28;
  // Peer to peer: the catalog's PCIe Gen4 link (32 GB/s) after vLLM's custom all-reduce (9 us).
  EXPECT_NEAR(tp2("{}").allreduce_ms, layers * (9e-3 + bytes / 32e9 * 1e3), 1e-9);
  // Through host memory: NCCL's SHM transport, 6 GB/s after 12 us.
  EXPECT_NEAR(tp2("{allreduce_path: host}").allreduce_ms, layers * (12e-3 + bytes / 6e9 * 1e3),
              1e-9);
  // A measured bandwidth or latency overrides the path's.
  EXPECT_NEAR(tp2("{allreduce_path: host, allreduce_bandwidth_gbs: 3, allreduce_latency_us: 20}")
                  .allreduce_ms,
              layers * (20e-3 + bytes / 3e9 * 1e3), 1e-9);
  try {
    tp2("{allreduce_path: nvswitch}");
    FAIL() << "expected ScenarioError";
  } catch (const ScenarioError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("s.yaml"), std::string::npos) << msg;
    EXPECT_NE(msg.find("p2p, host"), std::string::npos) << msg;
  }
}

TEST(RooflineCostModel, EmptyBatchTakesNoTime) {
  const RooflineCostModel m = roofline("L40S", "Qwen2.5-7B-Instruct");
  EXPECT_EQ(m.step_time({}), 0);
  const std::vector<BatchEntry> idle = {{0, 100}};
  EXPECT_EQ(m.step_time(idle), 0);
}

TEST(RooflineCostModel, LongerContextAndBiggerBatchesCostMore) {
  const RooflineCostModel m = roofline("RTX-PRO-6000", "Qwen3-32B-FP8");
  const std::vector<BatchEntry> short_ctx = {{1, 100}};
  const std::vector<BatchEntry> long_ctx = {{1, 30000}};
  EXPECT_LT(m.step_time(short_ctx), m.step_time(long_ctx));
  std::vector<BatchEntry> many(64, BatchEntry{1, 2000});
  EXPECT_LT(m.step_time(long_ctx), m.step_time(many));
}

TEST(FittedCostModel, ReproducesItsFormulaExactly) {
  FittedCoefficients c;
  c.prefill_a_ms = 3.0;
  c.prefill_b_ms_per_token = 0.05;
  c.prefill_c_ms_per_token2 = 1e-6;
  c.decode_a_ms = 9.0;
  c.decode_b_ms_per_ctx_token = 1e-4;
  c.decode_c_ms_per_seq = 0.02;
  const FittedCostModel m(c);

  const std::vector<BatchEntry> prefill = {{512, 0}, {1000, 64}};
  const double p = 3.0 + 0.05 * 1512 + 1e-6 * (512.0 * 512 + 1000.0 * 1000);
  EXPECT_DOUBLE_EQ(m.step_time_ms(prefill), p);

  const std::vector<BatchEntry> decode = {{1, 100}, {1, 900}, {1, 4000}};
  const double d = 9.0 + 1e-4 * 5000 + 0.02 * 3;
  EXPECT_DOUBLE_EQ(m.step_time_ms(decode), d);

  const std::vector<BatchEntry> mixed = {{512, 0}, {1, 100}, {1000, 64}, {1, 900}, {1, 4000}};
  EXPECT_DOUBLE_EQ(m.step_time_ms(mixed), p + d);
  EXPECT_EQ(m.step_time(mixed), ms_to_ns(p + d));
  EXPECT_EQ(m.step_time({}), 0);
}

TEST(FittedCostModel, DefaultsApproximateTheRooflineForLlama8bOnA100) {
  const auto fitted = make_cost_model(
      [] {
        Params p = cost_model_spec().defaults();
        p.set("type", std::string("fitted"));
        return p;
      }(),
      find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1);
  const auto roof = make_cost_model(cost_model_spec().defaults(), find_gpu("A100-80GB-SXM"),
                                    find_model("Llama-3.1-8B"), 1);
  for (const std::vector<BatchEntry>& batch :
       {std::vector<BatchEntry>{{1, 0}}, std::vector<BatchEntry>{{1, 4000}, {1, 8000}},
        std::vector<BatchEntry>{{2048, 0}}, std::vector<BatchEntry>{{8192, 0}}}) {
    const double f = ns_to_ms(fitted->step_time(batch));
    const double r = ns_to_ms(roof->step_time(batch));
    EXPECT_NEAR(f / r, 1.0, 0.01) << f << " vs " << r;
  }
}

TEST(CostModelFactory, DefaultsAreTheCalibratedRoofline) {
  const Params p = cost_model_spec().defaults();
  EXPECT_EQ(p.get_string("type"), "roofline");
  EXPECT_DOUBLE_EQ(p.get_double("compute_efficiency"), kDefaultComputeEfficiency);
  // 0: the GPU's own (the H200 takes the H100's 0.90), else the pooled default.
  EXPECT_DOUBLE_EQ(p.get_double("bandwidth_efficiency"), 0.0);
  EXPECT_DOUBLE_EQ(p.get_double("step_overhead_ms"), kDefaultStepOverheadMs);
  for (const auto& def : cost_model_spec().defs()) EXPECT_FALSE(def.help.empty()) << def.name;
  const auto m = make_cost_model(p, find_gpu("H200"), find_model("Qwen3-32B"), 1);
  EXPECT_NE(dynamic_cast<const RooflineCostModel*>(m.get()), nullptr);
  EXPECT_NE(m->describe().find("roofline"), std::string::npos);
  EXPECT_NE(m->describe().find("GB/s x 0.90"), std::string::npos) << m->describe();
  const auto l40s = make_cost_model(p, find_gpu("L40S"), find_model("Qwen3-32B"), 1);
  EXPECT_NE(l40s->describe().find("GB/s x 0.82"), std::string::npos) << l40s->describe();
  Params set = p;
  set.set("bandwidth_efficiency", 0.5);
  const auto given = make_cost_model(set, find_gpu("H200"), find_model("Qwen3-32B"), 1);
  EXPECT_NE(given->describe().find("GB/s x 0.50"), std::string::npos) << given->describe();
}

TEST(CostModelFactory, UnknownTypeListsTheValidOnes) {
  Params p = cost_model_spec().defaults();
  p.set("type", std::string("vidur"));
  try {
    make_cost_model(p, find_gpu("H200"), find_model("Qwen3-32B"), 1);
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("vidur"), std::string::npos);
    EXPECT_NE(msg.find("fitted"), std::string::npos);
    EXPECT_NE(msg.find("roofline"), std::string::npos);
  }
  // Through YAML, the spec's choices reject it first.
  const YAML::Node node = YAML::Load("{type: vidur}");
  EXPECT_THROW(cost_model_spec().resolve(node, YamlWhere{"s.yaml", "pods.cost_model"}),
               ScenarioError);
  EXPECT_THROW(
      make_cost_model(cost_model_spec().defaults(), find_gpu("H200"), find_model("Qwen3-32B"), 0),
      ScenarioError);
}

}  // namespace
}  // namespace fleetsim
