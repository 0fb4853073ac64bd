#include "models/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>
#include <utility>

#include "models/kv_capacity.h"
#include "sim/errors.h"

namespace fleetsim {

// Where the defaults come from.
//
// Efficiencies: the Vidur per-operator profiles in shared/data/profiles (microsoft/vidur,
// data/profiling/compute) time each linear operator of one transformer layer against the
// number of tokens: four models on an A100, two on an H100, each at tensor parallel 1, 2, 4 and
// 8 (24 curves, 7,752 step sizes). Summing attn_pre_proj, attn_post_proj, mlp_up_proj and
// mlp_down_proj (models/cost_model_profile_test.cc refits all of this):
//  - compute: the steps of 2,048 tokens and more average 0.72 of the BF16 peak at TP 1 (A100
//    Meta-Llama-3-8B 0.723, H100 Llama-2-7b 0.717; 0.74-0.77 at the margin): 0.73.
//  - memory: a step of 1 to 8 tokens takes bytes / (0.82 x peak bandwidth) plus 4.2 us for each
//    of its four kernels (least squares over all 24 curves). The fixed part is why a small
//    per-GPU matrix (Llama-3-8B at TP 8: 27M weights a layer) runs at 0.5 of peak where a large
//    one (70B at TP 1) runs at 0.8. Each GPU's own curves, at that floor, give 0.78 on the A100
//    and 0.90 on the H100 (HBM2e against HBM3): the GPU catalog carries those, and 0.82 is what
//    a part nobody profiled gets.
//  - the ridge: between the two, compute and memory overlap imperfectly. A plain max() is 1.4
//    to 1.5 times too fast at the crossover (A100 Llama-3-8B, 128 tokens: 0.377 ms measured,
//    0.274 predicted). Adding 0.62 of the shorter of the two (least squares over every step,
//    the three above held) takes the RMS log error over all 7,752 steps from 0.22 to 0.08, and
//    lowers it on every one of the 24 curves.
//    Marlin's dequantizing kernels (FP8 weights on Ampere, INT4) are built to hide their weight
//    loads behind their arithmetic and measure close to the plain max() (IST-DASLab/marlin):
//    they keep a fraction of 0 (unoverlapped_fraction()).
//  - element-wise kernels: between the GEMMs a layer normalizes (vLLM's fused residual add and
//    RMSNorm, twice), rotates queries and keys, and gates its MLP (SiLU-and-mul). Each reads and
//    writes the step's activations once, so they are bound by DRAM, not arithmetic, and run one
//    after another with the GEMMs. Vidur times them too (input_layernorm,
//    post_attention_layernorm, attn_rope, mlp_act, add): from 1,024 tokens up they move their
//    bytes at 0.47 of an A100's peak bandwidth and 0.50 of an H100's, 0.48 pooled. They add 5 to
//    10% to a TP-1 layer's linear time on the A100 and 8 to 19% on the H100, whose arithmetic
//    outpaces its memory further, and more at high TP, where the norms are not split.
// One set shared by every GPU but the bandwidth efficiency.
//
// Step overhead: what a step costs beyond its matrix products and DRAM traffic, i.e. the
// scheduler, input preparation, sampling, detokenization hand-off and the small non-matmul
// kernels. vLLM PR #17866 (V1 engine, May 2025) serves Llama-3.2-1B one request at a time with
// a mean TPOT of 2.73 ms; streaming its 2.47 GB of BF16 weights at 0.82 of an H100's (A100's)
// bandwidth plus its 16 layers' kernel floors takes 1.17 (1.75) ms, which leaves 1.0 to 1.6 ms a
// step: we take 1.5 ms. (The V0 engine's gap was larger, about 4 ms a decode step:
// vllm-project/vllm#6854.)
//
// Dequantizing GEMMs: weights stored in a type the tensor cores cannot multiply (FP8 on Ampere,
// INT4/INT8) are expanded to BF16 inside the kernel (Marlin; vLLM's FP8 path on Ampere is Marlin
// W8A16, vllm-project/vllm#5975). While a step is memory-bound this only saves bytes; once it is
// compute-bound the dequantization costs tensor-core time. Marlin's own benchmark on an A100
// (vllm-project/vllm#2497, 2024-01-24) plateaus at about 141 TFLOP/s from 128 tokens up, 0.60 to
// 0.66 of torch's FP16 GEMM at 1,024 to 4,000 tokens, and the kernel's author notes that past
// ~128 tokens weight-only quantization cannot be faster than FP16 (IST-DASLab/marlin#21). We take
// 0.62 of the dense BF16 efficiency: 0.73 x 0.62 = 0.45 of peak, i.e. 141 of 312 TFLOP/s.

namespace {

constexpr double kBf16Bytes = 2.0;
constexpr double kMoeFp8OverBf16 = 1.15;

// TP all-reduces per layer: one after attention (o_proj), one after the MLP (down_proj).
constexpr double kAllReducesPerLayer = 2.0;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

const std::vector<std::string>& allreduce_path_names() {
  static const std::vector<std::string> kNames = {"p2p", "host"};
  return kNames;
}

AllreducePath allreduce_path_named(const std::string& name) {
  if (name == "p2p") return AllreducePath::kP2p;
  if (name == "host") return AllreducePath::kHost;
  throw Error("unknown all-reduce path '" + name +
              "'; valid paths: " + join(allreduce_path_names(), ", "));
}

double bandwidth_efficiency_for(const GpuSpec& gpu, double requested) {
  if (requested > 0) return requested;
  return gpu.bandwidth_efficiency > 0 ? gpu.bandwidth_efficiency : kDefaultBandwidthEfficiency;
}

bool allreduces_through_nccl_over_pcie(const GpuSpec& gpu, std::int32_t tp, AllreducePath path) {
  return path == AllreducePath::kP2p && tp > 2 && tp > gpu.nvlink_gpus;
}

double default_allreduce_latency_us(AllreducePath path, const GpuSpec& gpu, std::int32_t tp) {
  if (path == AllreducePath::kHost) return kHostAllreduceLatencyUs;
  return allreduces_through_nccl_over_pcie(gpu, tp, path) ? kNcclPcieLatencyUs
                                                          : kDefaultAllreduceLatencyUs;
}

double default_allreduce_bandwidth_gbs(AllreducePath path, const GpuSpec& gpu, std::int32_t tp) {
  if (path == AllreducePath::kHost) return kHostAllreduceBusGbs;
  if (!allreduces_through_nccl_over_pcie(gpu, tp, path)) return gpu.interconnect_gbs;
  return std::min(tp <= 4 ? kNcclPcieBusGbsUpToFour : kNcclPcieBusGbs, gpu.interconnect_gbs);
}

namespace {

// DRAM bytes per token, per GPU, that the element-wise kernels of every layer move.
double elementwise_bytes(const LlmSpec& llm, std::int32_t tp) {
  // BF16 activations, each read and written once a kernel: two fused residual-add RMSNorms
  // (x and the residual in, both out: 8 bytes an element of the hidden width, which no rank
  // splits), the rotary embedding of this rank's queries and keys (MLA rotates only its
  // qk_rope_head_dim part), and SiLU-and-mul (the gate and up halves in, their product out) over
  // the MLP width a token passes through: the dense MLP, or its routed experts and shared one.
  // Some models norm more than the hidden rows: Qwen3's per-head query and key norms read and
  // write the rank's q and k once more, and MLA norms its query bottleneck and its KV latent,
  // which every rank computes whole.
  const double parts = tp;
  const double kv_heads = std::max(1.0, static_cast<double>(llm.num_kv_heads) / parts);
  const double rotated = llm.is_mla() ? (llm.num_heads / parts + 1.0) * llm.qk_rope_head_dim
                                      : (llm.num_heads / parts + kv_heads) * llm.head_dim;
  const double qk_normed = llm.qk_norm && !llm.is_mla() ? rotated : 0.0;  // the same q and k
  const double latent_normed =
      llm.is_mla() ? static_cast<double>(llm.q_lora_rank) + llm.kv_lora_rank : 0.0;
  const double dense_width = static_cast<double>(llm.intermediate_size) / parts;
  const double expert_width =
      (static_cast<double>(llm.experts_per_token) * llm.moe_intermediate_size +
       llm.shared_expert_intermediate_size) /
      parts;
  const double moe = llm.moe_layers();
  const double mlp = (llm.layers - moe) * dense_width + moe * expert_width;
  return kBf16Bytes * (2.0 * 4.0 * llm.hidden_size * llm.layers +
                       2.0 * (rotated + qk_normed + latent_normed) * llm.layers + 3.0 * mlp);
}

}  // namespace

std::string roofline_changes_since(int revision, const LlmSpec* llm) {
  std::string out;
  if (revision < 2) {
    out +=
        "the element-wise kernels between the GEMMs (norms, rotary, SiLU-and-mul) at "
        "elementwise_efficiency, and each profiled GPU's own bandwidth efficiency";
  }
  if (revision < 3 && (llm == nullptr || llm->qk_norm || llm->is_mla())) {
    out += std::string(out.empty() ? "" : "; ") +
           "Qwen3's query and key norms and MLA's latent norms among those kernels";
  }
  if (revision < 4 && (llm == nullptr || llm->is_moe())) {
    out += std::string(out.empty() ? "" : "; ") +
           "a mixture of experts' expert GEMMs at moe_gemm_factor of the dense speed (FP8 "
           "experts at 1.15x the BF16 rate)";
  }
  if (revision < 5 && (llm == nullptr || llm->is_moe())) {
    out += std::string(out.empty() ? "" : "; ") +
           "an MoE layer's fixed kernel time: its router's and shared expert's GEMMs at the "
           "kernel floor, and the fused-MoE block's routing kernels at moe_routing_us";
  }
  return out;
}

RooflineCostModel::RooflineCostModel(GpuSpec gpu, LlmSpec llm, std::int32_t tp, RooflineConstants k,
                                     std::int32_t kv_dtype_bytes)
    : gpu_(std::move(gpu)), llm_(std::move(llm)), tp_(tp), k_(k), kv_bytes_per_token_layer_(0) {
  if (tp_ < 1) throw ScenarioError("tensor parallel size must be >= 1, got " + std::to_string(tp));
  k_.bandwidth_efficiency = bandwidth_efficiency_for(gpu_, k_.bandwidth_efficiency);
  if (k_.compute_efficiency <= 0 || k_.bandwidth_efficiency <= 0 || k_.dequant_gemm_factor <= 0 ||
      k_.moe_gemm_factor <= 0) {
    throw ScenarioError("cost model efficiencies must be > 0");
  }
  if (k_.unoverlapped_fraction < 0 || k_.unoverlapped_fraction > 1 || k_.kernel_floor_us < 0 ||
      k_.moe_routing_us < 0) {
    throw ScenarioError(
        "cost model: unoverlapped_fraction must be in [0, 1], kernel_floor_us and moe_routing_us "
        ">= 0");
  }
  if (!(k_.elementwise_efficiency > 0 && k_.elementwise_efficiency <= 1)) {
    throw ScenarioError("cost model: elementwise_efficiency must be in (0, 1]");
  }
  if (k_.allreduce_bandwidth_gbs <= 0) {
    k_.allreduce_bandwidth_gbs = default_allreduce_bandwidth_gbs(k_.allreduce_path, gpu_, tp_);
  }
  if (k_.allreduce_latency_us <= 0) {
    k_.allreduce_latency_us = default_allreduce_latency_us(k_.allreduce_path, gpu_, tp_);
  }
  if (tp_ > 1 && k_.allreduce_bandwidth_gbs <= 0) {
    throw ScenarioError("GPU " + gpu_.name + " has no interconnect bandwidth for tp > 1");
  }
  kv_bytes_per_token_layer_ = llm_.kv_bytes_per_token_layer(kv_dtype_bytes, tp_);
  // A quadrature: computed only where expert parallelism uses it, as fleets build many pods.
  if (k_.expert_parallel && tp_ > 1 && llm_.is_moe()) {
    max_normal_tp_ = expected_max_standard_normal(tp_);
  }
  elementwise_bytes_per_token_ = elementwise_bytes(llm_, tp_);
  expert_padding_ = expert_padding_factor(gpu_, llm_, tp_, k_.expert_parallel);
}

namespace {

// The GPU's tensor-core peak for the weights' own type; 0 where it has none, or where (INT4
// W4A16) the kernels always dequantize to BF16.
double native_peak(const GpuSpec& gpu, WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return gpu.bf16_tflops;
    case WeightDtype::kFp8:
      return gpu.fp8_tflops;
    case WeightDtype::kInt8:
      return gpu.int8_tops;
    case WeightDtype::kInt4:
      return 0;
    case WeightDtype::kFp4:
      return gpu.fp4_tflops;
    case WeightDtype::kMxfp4:
      // vLLM's MXFP4 MoE runs W4A16 by default on every GPU: Triton or Marlin kernels before
      // Blackwell, FlashInfer's MXFP4 x BF16 on it (quantization/mxfp4.py, get_mxfp4_backend;
      // MXFP8 activations only on request, VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8).
      return 0;
  }
  return 0;
}

}  // namespace

double RooflineCostModel::linear_peak_tflops() const {
  const double native = native_peak(gpu_, llm_.weight_dtype);
  return native > 0 ? native : gpu_.bf16_tflops;
}

double RooflineCostModel::expert_peak_tflops() const {
  // vLLM's Triton fused-MoE kernel gains little from FP8 tensor cores: tuned for Qwen3's experts
  // on an H200, FP8 runs 10-17% faster than BF16 from 4 tokens up (vllm-project/vllm#35457),
  // not twice.
  const double linear = linear_peak_tflops();
  if (llm_.weight_dtype != WeightDtype::kFp8 || dequantizes_weights()) return linear;
  return std::min(linear, kMoeFp8OverBf16 * gpu_.bf16_tflops);
}

bool RooflineCostModel::dequantizes_weights() const {
  return llm_.weight_dtype != WeightDtype::kBf16 && llm_.active_quantized_params() > 0 &&
         native_peak(gpu_, llm_.weight_dtype) <= 0;
}

double RooflineCostModel::experts_touched(double tokens) const {
  // With each token choosing k of E experts, and the choices taken as uniform and independent, a
  // step of T tokens touches E (1 - (1 - k/E)^T) experts a layer on average (an upper bound:
  // real routers are skewed, so a batch shares more experts). One token reads k; a few hundred
  // read nearly all E.
  const double e = llm_.num_experts;
  return e * (1.0 - std::pow(1.0 - llm_.experts_per_token / e, std::max(tokens, 1.0)));
}

double RooflineCostModel::weight_bytes_per_step(double tokens) const {
  // The embedding table is only gathered (a few rows a token); every other weight, lm_head
  // included, is read once per step whatever the batch, except the experts of an MoE layer
  // that none of the step's tokens was routed to (experts_touched).
  // (A model with tied embeddings reads the table whole as its lm_head.)
  double bytes = llm_.weight_bytes_total() -
                 (llm_.tied_embeddings ? 0.0 : llm_.embedding_params() * kBf16Bytes);
  double busiest_extra = 0;  // expert parallelism: the most loaded GPU's experts beyond its share
  if (llm_.is_moe()) {
    const double touched = experts_touched(tokens);
    // The checkpoint's experts out, the touched ones in as vLLM padded them (kv_capacity.h).
    const double stored = llm_.expert_bytes();
    const double expert_bytes = stored * expert_padding_;
    bytes += touched * expert_bytes - llm_.num_experts * stored;
    // A GPU holds num_experts / tp of them whole, so it reads at most all of those.
    const double imbalance =
        std::min(expert_parallel_imbalance(touched), llm_.num_experts / touched);
    busiest_extra = (imbalance - 1.0) * touched * expert_bytes / tp_;
  }
  const double whole = llm_.replicated_weight_bytes();
  return (bytes - whole) / tp_ + whole + busiest_extra;
}

double expected_max_standard_normal(std::int32_t n) {
  if (n <= 1) return 0.0;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by the midpoint rule over [-10, 10].
  constexpr int kSteps = 20000;
  constexpr double kLow = -10.0;
  constexpr double kHigh = 10.0;
  const double h = (kHigh - kLow) / kSteps;
  double sum = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double x = kLow + (i + 0.5) * h;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    const double cdf = 0.5 * std::erfc(-x / std::numbers::sqrt2);
    sum += x * n * phi * std::pow(cdf, n - 1);
  }
  return sum * h;
}

double RooflineCostModel::expert_parallel_imbalance(double items) const {
  // Each of `items` lands on one of the tp GPUs at random: a GPU's count is binomial, mean
  // items / tp, and the largest of tp such counts is about the mean plus expected_max_standard_
  // normal(tp) standard deviations (the normal approximation; it errs high for very few items,
  // where the cap of everything on one GPU takes over).
  if (!k_.expert_parallel || tp_ <= 1 || !llm_.is_moe() || items <= 0) return 1.0;
  const double n = tp_;
  return std::min(n, 1.0 + max_normal_tp_ * std::sqrt((n - 1.0) / items));
}

double RooflineCostModel::moe_padded_rows(double tokens) const {
  // vLLM's fused MoE kernels sort a step's (token, expert) pairs by expert and pad each expert's
  // rows up to a multiple of the kernel's block of rows, and the padding rows are multiplied too
  // (fused_moe/moe_align_block_size.py). The block grows with the rows an expert gets: tuned
  // fused_moe configs go from 16 rows at decode sizes to 64 and more at prefill sizes, and
  // triton_kernels' matmul_ogs (gpt-oss on Hopper) picks the power of two of the rows per
  // expert (opt_flags.py). We take that power of two between 16 and 64, vLLM's default block
  // at prefill sizes (fused_moe.py, get_default_config). An expert with n rows computes
  // ceil(n / block) blocks: one block for each touched expert while n stays below the block, and
  // about half a block of padding on top of its rows once n spreads over several.
  if (!llm_.is_moe()) return 0.0;
  const double e = llm_.num_experts;
  const double t = std::max(tokens, 1.0);
  const double rows = t * llm_.experts_per_token;
  const double block = std::clamp(std::exp2(std::ceil(std::log2(rows / e))), 16.0, 64.0);
  const double touched = experts_touched(t);
  return std::max(touched * block, rows + touched * (block - 1.0) / 2.0);
}

namespace {

// Query-key pairs of `n` new tokens after `c` cached ones, causal, when a query sees at most
// `window` keys (0: all of them): the integral of min(position, window) over [c, c + n).
double attention_pairs(double c, double n, double window) {
  if (window <= 0 || c + n <= window) return n * (c + n / 2.0);
  if (c >= window) return n * window;
  return (window * window - c * c) / 2.0 + (c + n - window) * window;
}

}  // namespace

RooflineCostModel::Breakdown RooflineCostModel::breakdown(std::span<const BatchEntry> batch) const {
  Breakdown b;
  double tokens = 0;
  double entries = 0;
  double logit_rows = 0;
  double attention_flops = 0;  // QK^T and PV over every layer, before the TP split
  double kv_read_tokens = 0;   // context tokens read, summed over layers
  double up_projected = 0;     // MLA: cached context tokens a prefill re-expands
  const double window = llm_.sliding_window;
  const double full_layers = llm_.full_attention_layers();
  const double sliding_layers = llm_.layers - full_layers;
  for (const auto& e : batch) {
    if (e.new_tokens <= 0) continue;
    const double n = e.new_tokens;
    const double c = e.context_tokens;
    tokens += n;
    entries += 1;
    // Logits at the sampled position, or at every position a draft-verifying decode checks
    // (the rejection sampler compares the target's distribution at each).
    logit_rows += e.verifies_drafts ? n : 1.0;
    // vLLM's MLA backends run a draft-verifying decode on the decode path too (their reorder
    // threshold is raised to 1 + num_speculative_tokens).
    const bool decode = e.is_decode();
    // QK^T and PV: 2 FLOPs per multiply-add, per query-key pair, per head, per width.
    const double per_pair =
        2.0 * llm_.num_heads * (llm_.attention_qk_dim(decode) + llm_.attention_v_dim(decode));
    attention_flops += per_pair * (full_layers * attention_pairs(c, n, 0) +
                                   sliding_layers * attention_pairs(c, n, window));
    kv_read_tokens += full_layers * c + sliding_layers * (window > 0 ? std::min(c, window) : c);
    if (!decode) up_projected += c;
  }
  if (entries == 0) return b;

  const double parts = tp_;
  // Linear layers: 2 FLOPs per weight per token, at the weights' compute dtype where they are
  // quantized, BF16 elsewhere; a 1/tp share of each, but every rank multiplies the replicated
  // ones whole. MLA's prefills also re-expand their cached latent context.
  const double replicated = llm_.replicated_params();
  const double replicated_quantized = llm_.quantized_experts_only ? 0.0 : replicated;
  const double replicated_bf16 = replicated - replicated_quantized;
  const double per_rank_quantized =
      (llm_.active_quantized_params() - replicated_quantized) / parts + replicated_quantized;
  const double per_rank_bf16 =
      (llm_.active_params() - llm_.active_quantized_params() - replicated_bf16) / parts +
      replicated_bf16;
  // The experts are stored in the weights' type whichever way the model is quantized; their
  // padding rows (moe_padded_rows) are multiplied at the same speed, a 1/tp share of each.
  const double expert_padding_flops =
      llm_.is_moe() ? 2.0 * (moe_padded_rows(tokens) - tokens * llm_.experts_per_token) *
                          llm_.expert_params() * llm_.moe_layers() / parts
                    : 0.0;
  const double even_expert_flops = llm_.is_moe()
                                       ? 2.0 * tokens * llm_.experts_per_token *
                                                 llm_.expert_params() * llm_.moe_layers() / parts +
                                             expert_padding_flops
                                       : 0.0;
  // Under expert parallelism the step waits for the GPU with the most token-expert pairs.
  const double expert_flops =
      expert_parallel_imbalance(std::max(tokens, 1.0) * llm_.experts_per_token) * even_expert_flops;
  const double quantized_flops =
      2.0 * per_rank_quantized * tokens + expert_padding_flops + (expert_flops - even_expert_flops);
  const double bf16_linear_flops =
      2.0 * (per_rank_bf16 * tokens +
             llm_.kv_up_projection_params() * llm_.layers * up_projected / parts);
  // BF16 work: attention, and the lm_head for the positions that are sampled (vLLM computes
  // logits only there).
  const double logits_flops = 2.0 * llm_.embedding_params() * logit_rows / parts;
  const double bf16_flops = attention_flops / parts + logits_flops + bf16_linear_flops;
  b.flops = quantized_flops + bf16_flops;
  const double linear_efficiency =
      k_.compute_efficiency * (dequantizes_weights() ? k_.dequant_gemm_factor : 1.0);
  b.compute_ms =
      ((quantized_flops - expert_flops) / (linear_efficiency * linear_peak_tflops() * 1e12) +
       expert_flops / (linear_efficiency * k_.moe_gemm_factor * expert_peak_tflops() * 1e12) +
       bf16_flops / (k_.compute_efficiency * gpu_.bf16_tflops * 1e12)) *
      1e3;

  // DRAM traffic: weights once, the KV of every context token read (within the window on
  // sliding layers), the new tokens' KV written. Activations are left out: at the sizes where
  // they would matter (thousands of tokens) the step is compute-bound, so they never move the
  // max().
  const double kv_layer = static_cast<double>(kv_bytes_per_token_layer_);
  b.bytes = weight_bytes_per_step(tokens) + kv_layer * (kv_read_tokens + tokens * llm_.layers);
  b.kernel_floor_ms = kernel_floor_ms();
  b.memory_ms = b.bytes / (k_.bandwidth_efficiency * gpu_.memory_bandwidth_gbs * 1e9) * 1e3 +
                b.kernel_floor_ms;

  if (tp_ > 1) {
    // Ring all-reduce of the [tokens, hidden] BF16 activations: each GPU sends and receives
    // 2 (tp - 1) / tp of the buffer, after a fixed latency per all-reduce.
    const double buffer = tokens * llm_.hidden_size * kBf16Bytes;
    const double per_gpu = 2.0 * (parts - 1.0) / parts * buffer;
    b.allreduce_ms =
        kAllReducesPerLayer * llm_.layers *
        (k_.allreduce_latency_us * 1e-3 + per_gpu / (k_.allreduce_bandwidth_gbs * 1e9) * 1e3);
  }
  b.overhead_ms = k_.step_overhead_ms;
  b.elementwise_ms = tokens * elementwise_bytes_per_token() /
                     (k_.elementwise_efficiency * gpu_.memory_bandwidth_gbs * 1e9) * 1e3;
  b.gpu_ms = std::max(b.compute_ms, b.memory_ms) +
             unoverlapped_fraction() * std::min(b.compute_ms, b.memory_ms) + b.elementwise_ms;
  b.total_ms = b.gpu_ms + b.allreduce_ms + b.overhead_ms;
  return b;
}

double extra_linear_kernels_per_moe_layer(const LlmSpec& llm) {
  if (!llm.is_moe()) return 0.0;
  return 1.0 + (llm.shared_expert_intermediate_size > 0 ? 2.0 : 0.0);
}

double RooflineCostModel::kernel_floor_ms() const {
  const double moe_layers = llm_.moe_layers();
  const double linear_kernels =
      kLinearKernelsPerLayer * llm_.layers + extra_linear_kernels_per_moe_layer(llm_) * moe_layers;
  return (linear_kernels * k_.kernel_floor_us + moe_layers * k_.moe_routing_us) * 1e-3;
}

double RooflineCostModel::unoverlapped_fraction() const {
  // Marlin issues its weight loads asynchronously to all of its arithmetic and reaches close to
  // the ideal max(bytes, FLOPs) speed-up up to batches of 16-32 tokens (IST-DASLab/marlin,
  // README), where cuBLAS's dense GEMMs lose the unoverlapped fraction. vLLM runs MXFP4 experts
  // on Triton's matmul_ogs or FlashInfer on Hopper and the B200 instead (quantization/mxfp4.py),
  // weight-streaming kernels as well, with no measurement of their own; they are taken alike.
  // The four public gpt-oss TPOTs in docs/architectures.md and docs/pd-disaggregation.md do not
  // argue otherwise: charged the fraction on Hopper, their mean error grows from 12% to 15%.
  return dequantizes_weights() ? 0.0 : k_.unoverlapped_fraction;
}

TimeNs overlapped_step_time(TimeNs step, TimeNs host) {
  const TimeNs h = std::min(host, step);
  return std::max(step - h, h);
}

GpuDemand RooflineCostModel::gpu_demand(std::span<const BatchEntry> batch) const {
  const Breakdown b = breakdown(batch);
  // The all-reduces keep the links busy, not the SMs' arithmetic or DRAM; the element-wise
  // kernels keep DRAM busy.
  const double gpu_ms = b.gpu_ms + b.allreduce_ms;
  if (gpu_ms <= 0) return {};
  return {b.compute_ms / gpu_ms, (b.memory_ms + b.elementwise_ms) / gpu_ms};
}

TimeNs RooflineCostModel::step_time(std::span<const BatchEntry> batch) const {
  return ms_to_ns(breakdown(batch).total_ms);
}

std::string RooflineCostModel::describe() const {
  const bool dequant = dequantizes_weights();
  return "roofline: " + llm_.name + " on " + gpu_.name + " x" + std::to_string(tp_) +
         ", linear peak " + fmt("%.1f", linear_peak_tflops()) + " TFLOP/s" +
         (dequant ? " (" + weight_dtype_name(llm_.weight_dtype) +
                        " weights dequantized in the GEMM, x " +
                        fmt("%.2f", k_.dequant_gemm_factor) + ")"
                  : "") +
         " x " + fmt("%.2f", k_.compute_efficiency) + ", " +
         fmt("%.0f", gpu_.memory_bandwidth_gbs) + " GB/s x " +
         fmt("%.2f", k_.bandwidth_efficiency) + ", weights " +
         fmt("%.2f", weight_bytes_per_step() / 1e9) + " GB/step" +
         (llm_.is_moe()
              ? " at one token (" + std::to_string(llm_.experts_per_token) + " of " +
                    std::to_string(llm_.num_experts) + " experts), expert GEMMs x " +
                    fmt("%.2f", k_.moe_gemm_factor) + " at " + fmt("%.1f", expert_peak_tflops()) +
                    " TFLOP/s, routing " + fmt("%.1f", k_.moe_routing_us) + " us a layer" +
                    (k_.expert_parallel && tp_ > 1 ? ", experts spread whole (expert parallel)"
                                                   : "")
              : "") +
         ", KV " + std::to_string(kv_bytes_per_token_layer_ * llm_.layers) + " B/token" +
         (llm_.sliding_window > 0 ? " (" + std::to_string(llm_.sliding_layers) + " layers within " +
                                        std::to_string(llm_.sliding_window) + " tokens)"
                                  : "") +
         ", overhead " + fmt("%.2f", k_.step_overhead_ms) + " ms, " +
         fmt("%.2f", unoverlapped_fraction()) +
         " of min(compute, memory) unoverlapped, kernel floor " + fmt("%.1f", k_.kernel_floor_us) +
         " us, element-wise " + fmt("%.0f", elementwise_bytes_per_token() / 1e3) + " kB/token x " +
         fmt("%.2f", k_.elementwise_efficiency) +
         (tp_ > 1 ? ", all-reduce " + fmt("%.0f", k_.allreduce_bandwidth_gbs) + " GB/s after " +
                        fmt("%.1f", k_.allreduce_latency_us) + " us" +
                        (k_.allreduce_path == AllreducePath::kHost
                             ? " through host memory"
                             : (allreduces_through_nccl_over_pcie(gpu_, tp_, k_.allreduce_path)
                                    ? " (NCCL over PCIe)"
                                    : ""))
                  : "");
}

double FittedCostModel::step_time_ms(std::span<const BatchEntry> batch) const {
  double prefill_sum = 0, prefill_sum_sq = 0, decode_ctx = 0, decode_count = 0;
  bool any_prefill = false;
  for (const auto& e : batch) {
    if (e.new_tokens > 1) {
      const double l = e.new_tokens;
      prefill_sum += l;
      prefill_sum_sq += l * l;
      any_prefill = true;
    } else if (e.new_tokens == 1) {
      decode_ctx += e.context_tokens;
      decode_count += 1;
    }
  }
  double ms = 0;
  if (any_prefill) {
    ms += c_.prefill_a_ms + c_.prefill_b_ms_per_token * prefill_sum +
          c_.prefill_c_ms_per_token2 * prefill_sum_sq;
  }
  if (decode_count > 0) {
    ms += c_.decode_a_ms + c_.decode_b_ms_per_ctx_token * decode_ctx +
          c_.decode_c_ms_per_seq * decode_count;
  }
  return ms;
}

TimeNs FittedCostModel::step_time(std::span<const BatchEntry> batch) const {
  // A fit can extrapolate below zero; time never goes back.
  return std::max<TimeNs>(0, ms_to_ns(step_time_ms(batch)));
}

std::string FittedCostModel::describe() const {
  return "fitted: prefill " + fmt("%g", c_.prefill_a_ms) + " + " +
         fmt("%g", c_.prefill_b_ms_per_token) + " sum(l) + " +
         fmt("%g", c_.prefill_c_ms_per_token2) + " sum(l^2) ms; decode " +
         fmt("%g", c_.decode_a_ms) + " + " + fmt("%g", c_.decode_b_ms_per_ctx_token) +
         " sum(ctx) + " + fmt("%g", c_.decode_c_ms_per_seq) + " batch ms";
}

const ParamSpec& cost_model_spec() {
  // The fitted defaults are the roofline defaults for Llama-3.1-8B on an A100-80GB-SXM where
  // each part is bound: prefill compute-bound (a = 1.5 ms + 0.62 x the weights' 9.98 ms of
  // streaming and kernel floor, which the arithmetic does not hide; b = 2 x 6.98e9 FLOP / (0.73 x
  // 312 TFLOP/s) + 5.51 MB of element-wise traffic / (0.48 x 2,039 GB/s),
  // c = 2 x 32 layers x 32 heads x 128 / (0.73 x 312 TFLOP/s)), decode memory-bound
  // (a = 1.5 ms + 15.01 GB / (0.78 x 2,039 GB/s) + 32 layers x 4 kernels x 4.2 us, b =
  // 131,072 KV bytes / same bandwidth, c = the same + the token's element-wise traffic).
  static const ParamSpec kSpec = [] {
    ParamSpec s;
    s.text("type", "roofline",
           "cost model: 'roofline' (from the GPU and model catalogs) or 'fitted' (coefficients "
           "below, fitted to your own step timings)",
           {"roofline", "fitted"})
        .text("calibration", "",
              "file written by `fleetsim calibrate` (relative to the scenario file) whose "
              "cost_model values replace these defaults; fields set here override it; '' = none")
        .real("compute_efficiency", kDefaultComputeEfficiency,
              "roofline: fraction of the dense tensor-core peak large matrix products reach "
              "(Vidur A100/H100 profiles: 0.72 on average over 2k-16k-token steps, 0.74-0.77 "
              "at the margin)",
              0.01, 1.0)
        .real("bandwidth_efficiency", 0.0,
              "roofline: fraction of the peak DRAM bandwidth a weight-streaming step reaches "
              "beside the kernels' floor; 0 = the GPU's measured one (Vidur profiles, 1-8-token "
              "steps at TP 1-8: A100 0.78, H100 0.90; `fleetsim list gpus`), else 0.82, pooled "
              "over both",
              0.0, 1.0)
        .real("unoverlapped_fraction", kDefaultUnoverlappedFraction,
              "roofline: fraction of the shorter of a step's compute time and memory time that "
              "is not hidden behind the longer (Vidur A100/H100 profiles: steps near the ridge "
              "take up to 1.5x max(compute, memory); 0 = perfect overlap, the plain roofline). "
              "Not applied where the weights are dequantized in the GEMM: Marlin overlaps its "
              "weight loads by design",
              0.0, 1.0)
        .real("kernel_floor_us", kDefaultKernelFloorUs,
              "roofline: fixed time of each linear-layer kernel (4 a layer; an MoE layer adds its "
              "router's and its shared expert's) beyond streaming its weights, us (Vidur "
              "A100/H100 profiles, 1-8-token steps at TP 1-8: 4.2 us beside 0.82 of peak "
              "bandwidth)",
              0.0, 1e3)
        .real("moe_routing_us", kDefaultMoeRoutingUs,
              "roofline: fixed time a mixture-of-experts layer spends in the fused-MoE block's "
              "kernels besides its two GEMMs (top-k, sorting tokens by expert, activation, "
              "weighted sum), us (vLLM's benchmark_moe.py at one token: 18.8-19.5 us on "
              "H100/H200, vllm-project/vllm#24700, sgl-project/sglang#11730)",
              0.0, 1e4)
        .real("elementwise_efficiency", kDefaultElementwiseEfficiency,
              "roofline: fraction of the peak DRAM bandwidth the element-wise kernels between "
              "the GEMMs (residual-add RMSNorms, rotary embedding, SiLU-and-mul) reach as they "
              "stream a step's activations (Vidur A100/H100 profiles, 1k-token steps and up: "
              "0.47 and 0.50, 0.48 pooled)",
              0.01, 1.0)
        .real("step_overhead_ms", kDefaultStepOverheadMs,
              "roofline: fixed cost of every step (vLLM V1 scheduling, input preparation, "
              "sampling, small kernels), ms",
              0.0)
        .real("dequant_gemm_factor", kDefaultDequantGemmFactor,
              "roofline: speed of GEMMs that dequantize their weights in the kernel (INT4 W4A16, "
              "and FP8 or FP4 weights on a GPU without tensor cores for them: Marlin) relative to "
              "dense BF16 GEMMs once compute-bound (vllm-project/vllm#2497: Marlin INT4 "
              "0.60-0.66x FP16 at 1k-4k tokens)",
              0.01, 1.0)
        .real("moe_gemm_factor", kDefaultMoeGemmFactor,
              "roofline: speed of a mixture of experts' fused grouped GEMMs (padding rows "
              "included) relative to dense GEMMs once compute-bound (vllm-project/vllm#44818: a "
              "128-expert fused-MoE block on an H200 at 0.53-0.56 of dense at 2k-4k tokens); FP8 "
              "experts run at 1.15x the BF16 rate, not 2x (#35457)",
              0.01, 1.0)
        .text("allreduce_path", "p2p",
              "roofline: how a tensor-parallel pod's GPUs exchange activations: p2p (NVLink, or "
              "PCIe peer to peer: the GPU catalog's link and vLLM's custom all-reduce, which "
              "vLLM runs over PCIe for two GPUs only; more PCIe GPUs go through NCCL's ring, 20 "
              "GB/s (30 up to four GPUs) after 25 us, voipmonitor/rtx6kpro's RTX PRO 6000s) or "
              "host (no peer to "
              "peer, as vLLM logs 'Custom allreduce is disabled because your platform lacks GPU "
              "P2P capability': NCCL through host memory, 6 GB/s after 12 us, NVIDIA/nccl#406 "
              "and nccl-tests over SHM)",
              allreduce_path_names())
        .real("allreduce_bandwidth_gbs", 0.0,
              "roofline: per-direction bus bandwidth of tensor-parallel all-reduces, GB/s; 0 = "
              "the path's (p2p: the GPU catalog's interconnect, NVLink or PCIe, and at most 30 "
              "through NCCL over three or four PCIe GPUs, 20 over more; host: 6)",
              0.0)
        .real("allreduce_latency_us", 0.0,
              "roofline: fixed cost of each tensor-parallel all-reduce (two a layer), us; 0 = the "
              "path's (p2p: 9, vLLM's custom all-reduce on H100 takes 8.5-11.8 us for 512 B-32 KB, "
              "sgl-project/sglang#2904, and 25 through NCCL over more than two PCIe GPUs; host: "
              "12, NCCL over SHM for 8 B-8 KB)",
              0.0, 1e6)
        .real("prefill_a_ms", 7.68, "fitted: prefill intercept, ms per step with a prefill")
        .real("prefill_b_ms_per_token", 0.06691, "fitted: prefill ms per new token")
        .real("prefill_c_ms_per_token2", 1.151e-6,
              "fitted: prefill ms per squared new tokens (attention)")
        .real("decode_a_ms", 11.48, "fitted: decode intercept, ms per step with decodes")
        .real("decode_b_ms_per_ctx_token", 8.241e-5, "fitted: decode ms per context token")
        .real("decode_c_ms_per_seq", 5.707e-3, "fitted: decode ms per decoding request");
    return s;
  }();
  return kSpec;
}

std::unique_ptr<CostModel> make_cost_model(const Params& params, const GpuSpec& gpu,
                                           const LlmSpec& llm, std::int32_t tp,
                                           std::int32_t kv_dtype_bytes, bool expert_parallel) {
  const std::string& type = params.get_string("type");
  if (tp < 1) throw ScenarioError("tensor parallel size must be >= 1, got " + std::to_string(tp));
  if (type == "roofline") {
    RooflineConstants k;
    k.compute_efficiency = params.get_double("compute_efficiency");
    k.bandwidth_efficiency = params.get_double("bandwidth_efficiency");
    k.step_overhead_ms = params.get_double("step_overhead_ms");
    k.allreduce_bandwidth_gbs = params.get_double("allreduce_bandwidth_gbs");
    k.dequant_gemm_factor = params.get_double("dequant_gemm_factor");
    k.moe_gemm_factor = params.get_double("moe_gemm_factor");
    k.allreduce_path = allreduce_path_named(params.get_string("allreduce_path"));
    k.allreduce_latency_us = params.get_double("allreduce_latency_us");  // <= 0: the path's
    k.unoverlapped_fraction = params.get_double("unoverlapped_fraction");
    k.kernel_floor_us = params.get_double("kernel_floor_us");
    k.elementwise_efficiency = params.get_double("elementwise_efficiency");
    k.moe_routing_us = params.get_double("moe_routing_us");
    k.expert_parallel = expert_parallel;
    return std::make_unique<RooflineCostModel>(gpu, llm, tp, k, kv_dtype_bytes);
  }
  if (type == "fitted") {
    FittedCoefficients c;
    c.prefill_a_ms = params.get_double("prefill_a_ms");
    c.prefill_b_ms_per_token = params.get_double("prefill_b_ms_per_token");
    c.prefill_c_ms_per_token2 = params.get_double("prefill_c_ms_per_token2");
    c.decode_a_ms = params.get_double("decode_a_ms");
    c.decode_b_ms_per_ctx_token = params.get_double("decode_b_ms_per_ctx_token");
    c.decode_c_ms_per_seq = params.get_double("decode_c_ms_per_seq");
    return std::make_unique<FittedCostModel>(c);
  }
  throw UnknownNameError("cost model", type, {"fitted", "roofline"});
}

}  // namespace fleetsim
