#include "models/kv_capacity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/errors.h"

namespace fleetsim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Activations of the profiling forward pass are BF16.
constexpr double kActivationBytes = 2.0;

// Bytes per (request, vocab entry) of the dummy sampler run that follows the profiling forward
// pass (vLLM V1 gpu_model_runner.py profile_run -> _dummy_sampler_run): the lm_head output in
// BF16 (2), its FP32 copy (sampler.py: logits.to(torch.float32)) (4) and the FP32 probabilities
// (4).
constexpr double kSamplerBytesPerLogit = 2.0 + 4.0 + 4.0;

// Memory the captured CUDA graphs hold, per GPU. vLLM V1 logs it at start-up ("Graph capturing
// finished in N secs, took X GiB"); public logs with the default capture sizes (up to 512
// tokens) show about 0.3 to 1.1 GiB, and vllm-project/vllm#27508 (gpt-oss-120b on an H100)
// shows 660 MiB "allocated in private pools (e.g., CUDA Graphs)". vLLM captures the graphs after
// sizing the KV cache, so they come out of the 1 - utilization headroom, unless
// VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 has the memory profiler estimate them first and set
// them aside (vllm/envs.py: "Disabled by default to preserve existing behavior"). Start-up logs
// of vLLM 0.10.1 agree: 29,053 blocks for Qwen2-7B on an A100, where the estimate would leave
// 0.75 GiB fewer (docs/fidelity-notes.md). 0.75 GiB is the middle of the observed range.
constexpr double kCudaGraphBytes = 0.75 * kGiB;

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", bytes / kGiB);
  return buf;
}

}  // namespace

double profiling_activation_bytes(const LlmSpec& llm, std::int32_t tp,
                                  std::int32_t max_num_batched_tokens, std::int32_t max_num_seqs) {
  const double tokens = max_num_batched_tokens;
  const double parts = std::max<std::int32_t>(1, tp);
  // The largest live set of a forward pass is inside the MLP: the fused gate_up output
  // [T, 2 I / tp] and the SiLU-and-mul output [T, I / tp], next to about four [T, H] tensors
  // (residual stream, normed input, attention output, MLP output). An MoE layer holds them for
  // each of a token's k experts, plus the k expert outputs before their weighted sum (vLLM's
  // fused_moe intermediate caches [T, k, 2 I], [T k, I] and [T, k, H]).
  const double dense = 3.0 * static_cast<double>(llm.intermediate_size) / parts;
  const double mlp =
      llm.is_moe() ? std::max(llm.dense_layers > 0 ? dense : 0.0,
                              llm.experts_per_token *
                                      (3.0 * llm.moe_intermediate_size / parts + llm.hidden_size) +
                                  3.0 * llm.shared_expert_intermediate_size / parts)
                   : dense;
  const double per_token = mlp + 4.0 * llm.hidden_size;
  const double forward = tokens * per_token * kActivationBytes;
  // The dummy sampler run computes logits for min(max_num_seqs, T) requests over the full
  // vocabulary (logits are gathered onto every rank's sampler).
  const double requests = std::min(max_num_seqs, max_num_batched_tokens);
  const double sampler = requests * static_cast<double>(llm.vocab_size) * kSamplerBytesPerLogit;
  // Cross-check: Qwen3-0.6B (H 1024, I 3072, vocab 151,936) with the LLM-class defaults on an
  // A100 (8192 tokens, 256 seqs) gives 0.20 + 0.36 = 0.57 GiB; vLLM's own log (PR #24577: 1.12
  // GiB of weights, 69.66 GiB of KV at 0.9 x 79.25 GiB) leaves 0.55 GiB for activations.
  return forward + sampler;
}

namespace {

std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

// Bytes of one MXFP4 expert of hidden size h and width i as vLLM allocates it: the gate-up and
// down projections' 4-bit values, an E8M0 scale per 32 of them, and their BF16 biases.
double mxfp4_expert_bytes(std::int64_t h, std::int64_t i) {
  const double values = 3.0 * static_cast<double>(h) * static_cast<double>(i);
  return values / 2.0 + values / 32.0 + 2.0 * static_cast<double>(2 * i + h);
}

}  // namespace

double expert_padding_factor(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                             bool expert_parallel) {
  const double cc = gpu.compute_capability;
  if (llm.weight_dtype != WeightDtype::kMxfp4 || !llm.is_moe() || cc <= 0) return 1.0;
  std::int64_t width_to = 128;  // Marlin
  const std::int64_t hidden_to = 256;
  if (cc >= 10.0 && cc < 11.0) width_to = 256;  // FlashInfer
  if (cc >= 9.0 && cc < 10.0) width_to = 64;    // triton_kernels
  const std::int32_t parts = std::max<std::int32_t>(1, tp);
  const std::int64_t h = llm.hidden_size;
  const std::int64_t i =
      expert_parallel ? llm.moe_intermediate_size : (llm.moe_intermediate_size + parts - 1) / parts;
  return mxfp4_expert_bytes(round_up(h, hidden_to), round_up(i, width_to)) /
         mxfp4_expert_bytes(h, i);
}

double loaded_weight_bytes(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                           bool expert_parallel) {
  const std::int32_t parts = std::max<std::int32_t>(1, tp);
  const double whole = llm.replicated_weight_bytes();
  const double share = (llm.weight_bytes_total() - whole) / parts + whole;
  const double experts = llm.expert_bytes() * llm.num_experts / parts;
  return share + (expert_padding_factor(gpu, llm, tp, expert_parallel) - 1.0) * experts;
}

std::int32_t attention_block_size(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t block_size) {
  if (!llm.is_mla()) return block_size;
  const double cc = gpu.compute_capability;
  if (cc >= 9.0 && cc < 10.0) return block_size % 64 == 0 ? block_size : 64;
  if (cc >= 10.0 && cc < 11.0) {
    if (llm.qk_nope_head_dim == 128) return block_size == 32 || block_size == 64 ? block_size : 64;
    return block_size % 128 == 0 ? block_size : 128;
  }
  return block_size;
}

SlidingWindowBlocks sliding_window_blocks(const LlmSpec& llm, std::int32_t block_size,
                                          std::int32_t* layers_per_group) {
  SlidingWindowBlocks s;
  const std::int32_t full = llm.full_attention_layers();
  const std::int32_t sliding = llm.layers - full;
  std::int32_t size = llm.layers;
  if (sliding > 0 && full > 0) {
    const std::int32_t small = std::min(full, sliding);
    const std::int32_t large = std::max(full, sliding);
    size = 2 * large < 3 * small ? large : small;
    s.full_groups = (full + size - 1) / size;
    s.groups = (sliding + size - 1) / size;
    s.window_blocks = (llm.sliding_window - 1 + block_size - 1) / block_size + 1;
    s.window_tokens = llm.sliding_window;
  }
  if (layers_per_group != nullptr) *layers_per_group = size;
  return s;
}

KvCapacity compute_kv_capacity(const GpuSpec& gpu, const LlmSpec& llm,
                               double gpu_memory_utilization, std::int32_t tp,
                               std::int32_t kv_dtype_bytes, std::int32_t block_size,
                               std::int32_t max_num_batched_tokens, std::int32_t max_num_seqs,
                               bool estimate_cudagraph_memory, bool expert_parallel) {
  if (!(gpu_memory_utilization > 0.0 && gpu_memory_utilization <= 1.0)) {
    throw ScenarioError("gpu_memory_utilization must be in (0, 1], got " +
                        std::to_string(gpu_memory_utilization));
  }
  if (tp < 1) throw ScenarioError("tensor parallel size must be >= 1, got " + std::to_string(tp));
  if (kv_dtype_bytes < 1) {
    throw ScenarioError("KV dtype bytes must be >= 1, got " + std::to_string(kv_dtype_bytes));
  }
  if (block_size < 1) {
    throw ScenarioError("block_size must be >= 1, got " + std::to_string(block_size));
  }
  if (max_num_batched_tokens < 1 || max_num_seqs < 1) {
    throw ScenarioError("max_num_batched_tokens and max_num_seqs must be >= 1");
  }

  KvCapacity cap;
  cap.total_bytes = gpu.memory_gib * kGiB;
  cap.usable_bytes = cap.total_bytes * gpu_memory_utilization;
  // Every weight, embeddings and lm_head included, is split across the TP ranks
  // (column/row-parallel linear layers, vocab-parallel embedding and lm_head), but for MLA's
  // replicated down-projections.
  cap.weight_bytes = loaded_weight_bytes(gpu, llm, tp, expert_parallel);
  cap.activation_bytes = profiling_activation_bytes(llm, tp, max_num_batched_tokens, max_num_seqs);
  cap.cuda_graph_bytes = estimate_cudagraph_memory ? kCudaGraphBytes : 0.0;
  cap.kv_bytes = cap.usable_bytes - cap.weight_bytes - cap.activation_bytes - cap.cuda_graph_bytes;
  cap.sliding = sliding_window_blocks(llm, block_size, &cap.layers_per_group);
  cap.bytes_per_token = llm.kv_bytes_per_token_layer(kv_dtype_bytes, tp) * cap.layers_per_group *
                        cap.sliding.full_groups;

  const double block_bytes = static_cast<double>(cap.bytes_per_token) * block_size;
  cap.num_blocks =
      cap.kv_bytes > 0 ? static_cast<std::int64_t>(std::floor(cap.kv_bytes / block_bytes)) : 0;
  if (cap.kv_bytes <= 0 || cap.num_blocks < 1) {
    throw DeploymentError(
        "model " + llm.name + " does not fit on " + gpu.name + " (tp=" + std::to_string(tp) +
        "): weights " + gib(cap.weight_bytes) + " GiB per GPU, usable " + gib(cap.usable_bytes) +
        " GiB (" + gib(cap.total_bytes) + " GiB x " + std::to_string(gpu_memory_utilization) +
        "), activations " + gib(cap.activation_bytes) + " GiB" +
        (cap.cuda_graph_bytes > 0 ? ", CUDA graphs " + gib(cap.cuda_graph_bytes) + " GiB" : "") +
        " leave " + gib(cap.kv_bytes) +
        " GiB for the KV cache; use a larger GPU, more tensor or pipeline parallelism, or an "
        "FP8 checkpoint");
  }
  return cap;
}

double kv_bytes_for_request(const KvCapacity& cap, const LlmSpec& llm, std::int32_t block_size,
                            std::int64_t tokens, std::int32_t max_num_batched_tokens) {
  // One page of one group: bytes_per_token covers every full-attention group.
  const double page = static_cast<double>(cap.bytes_per_token) / cap.sliding.full_groups *
                      static_cast<double>(block_size);
  const auto pages = [block_size](std::int64_t n) { return (n + block_size - 1) / block_size; };
  double n = static_cast<double>(cap.sliding.full_groups) * static_cast<double>(pages(tokens));
  if (cap.sliding.groups > 0) {
    const std::int64_t seen = std::min<std::int64_t>(
        std::int64_t{llm.sliding_window} - 1 + max_num_batched_tokens, tokens);
    n += static_cast<double>(cap.sliding.groups) * static_cast<double>(pages(seen) + 1);
  }
  return n * page;
}

void check_room_for_max_model_len(const KvCapacity& cap, const GpuSpec& gpu, const LlmSpec& llm,
                                  std::int32_t tp, std::int32_t block_size,
                                  std::int32_t max_model_len, std::int32_t max_num_batched_tokens) {
  if (max_model_len <= 0) return;
  const double needed =
      kv_bytes_for_request(cap, llm, block_size, max_model_len, max_num_batched_tokens);
  if (needed <= cap.kv_bytes) return;
  // The longest length that fits: the needed bytes grow with the length.
  std::int64_t lo = 0, hi = max_model_len;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (kv_bytes_for_request(cap, llm, block_size, mid, max_num_batched_tokens) <= cap.kv_bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  throw DeploymentError(
      "model " + llm.name + " on " + gpu.name + " (tp=" + std::to_string(tp) +
      "): vLLM would not start: one request of max_model_len " + std::to_string(max_model_len) +
      " tokens needs " + gib(needed) + " GiB of KV cache per GPU and " + gib(cap.kv_bytes) +
      " GiB is left; the longest that fits is " + std::to_string(lo) +
      " tokens: set server.max_model_len to at most that, raise server.gpu_memory_utilization, "
      "or use more tensor or pipeline parallelism");
}

}  // namespace fleetsim
