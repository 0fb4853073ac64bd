// How many KV-cache blocks a vLLM pod gets, derived the way vLLM V1's GPU worker sizes its cache
// (vllm/v1/worker/gpu_worker.py, determine_available_memory):
//   KV bytes = total memory x gpu_memory_utilization
//              - weights - activation peak of a profiling forward pass
//              [- CUDA-graph memory, with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1].
#pragma once

#include <cstdint>

#include "models/gpu_catalog.h"
#include "models/kv_cache.h"
#include "models/llm_catalog.h"

namespace fleetsim {

// The KV block size a pod runs with: the server's, except where vLLM's latent-attention kernels
// impose theirs (vllm/platforms/cuda.py, check_and_update_config): FlashMLA on Hopper (compute
// capability 9.x) needs a multiple of 64 and raises anything else to 64; on Blackwell B200
// (10.x) FlashInfer's MLA takes 32 or 64 (else 64) when qk_nope_head_dim is 128, CUTLASS MLA
// a multiple of 128 (else 128). Other GPUs, unknown ones, and models without MLA keep theirs.
std::int32_t attention_block_size(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t block_size);

// Every byte figure is per GPU.
struct KvCapacity {
  double total_bytes = 0;       // CUDA-visible device memory
  double usable_bytes = 0;      // total x gpu_memory_utilization
  double weight_bytes = 0;      // this GPU's share of the weights
  double activation_bytes = 0;  // peak of the profiling run (forward pass + dummy sampler)
  double cuda_graph_bytes = 0;  // the CUDA graphs' memory, when set aside before sizing
  double kv_bytes = 0;          // what is left for the KV cache
  // Bytes one token of a block costs: every layer's KV, or with sliding-window layers the
  // pages of the full-attention groups (the blocks those groups hold for a sliding group are
  // counted in the same unit, in `sliding`).
  std::int64_t bytes_per_token = 0;
  std::int64_t num_blocks = 0;  // floor(kv_bytes / (bytes_per_token x block_size))
  std::int32_t layers_per_group = 0;
  SlidingWindowBlocks sliding;
};

// How vLLM's hybrid KV cache manager groups the layers of a model with sliding-window layers
// (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size): a group size of the
// smaller of the two layer counts (the larger when it is under 1.5 times the smaller, padding
// the groups), each kind split into ceil(count / size) groups; a block id is a page in each
// layer of a group, so every block costs `size` layers' pages whichever group holds it. A
// sliding group holds at most ceil((window - 1) / block_size) + 1 blocks a request. Without
// sliding layers: one group of every layer.
SlidingWindowBlocks sliding_window_blocks(const LlmSpec& llm, std::int32_t block_size,
                                          std::int32_t* layers_per_group = nullptr);

// Throws ScenarioError when an argument is out of range, or when the model does not fit (no
// room for even one KV block); the message names the GPU, the model, the weights and the
// usable memory in GiB. `max_num_seqs` bounds the dummy sampler run of the profiling pass.
// `estimate_cudagraph_memory`: vLLM's VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, whose default
// depends on the release (models/vllm_version.h).
KvCapacity compute_kv_capacity(const GpuSpec& gpu, const LlmSpec& llm,
                               double gpu_memory_utilization, std::int32_t tp,
                               std::int32_t kv_dtype_bytes, std::int32_t block_size,
                               std::int32_t max_num_batched_tokens, std::int32_t max_num_seqs = 256,
                               bool estimate_cudagraph_memory = false,
                               bool expert_parallel = false);

// KV bytes per GPU that one request of `tokens` tokens may need, as vLLM's startup check sums
// each layer's max_memory_usage_bytes (vllm/v1/kv_cache_interface.py): a full-attention layer
// pages the whole sequence; a sliding-window layer at most min(window - 1 +
// max_num_batched_tokens, tokens) of it, plus one page.
double kv_bytes_for_request(const KvCapacity& cap, const LlmSpec& llm, std::int32_t block_size,
                            std::int64_t tokens, std::int32_t max_num_batched_tokens);

// vLLM refuses to start when one request of max_model_len tokens does not fit the KV cache
// (vllm/v1/core/kv_cache_utils.py, check_enough_kv_cache_memory). Throws ScenarioError then,
// naming the longest length that fits, as vLLM's estimate_max_model_len does.
void check_room_for_max_model_len(const KvCapacity& cap, const GpuSpec& gpu, const LlmSpec& llm,
                                  std::int32_t tp, std::int32_t block_size,
                                  std::int32_t max_model_len, std::int32_t max_num_batched_tokens);

// Bytes one GPU holds for the weights once vLLM has loaded them: its share of the checkpoint,
// plus the padding vLLM gives an MXFP4 checkpoint's experts for the MoE kernel it runs on this
// GPU (vllm/model_executor/layers/quantization/mxfp4.py, get_mxfp4_backend and create_weights):
// - Marlin (Ampere, Ada, the RTX Blackwells of compute capability 12.x): each rank's expert
//   width to a multiple of 128 and the hidden size to a multiple of 256;
// - FlashInfer on Blackwell B200 (10.x): both to a multiple of 256;
// - triton_kernels' matmul_ogs on Hopper (9.x): the width to a multiple of 64 in create_weights,
//   and the swizzled Hopper layout holds gpt-oss-120b in 64.38 GiB (vllm-project/vllm#33155's
//   load log), the size of its hidden size padded to 256 (60.8 GiB unpadded);
// - a GPU of unknown compute capability: the checkpoint's size.
// With expert parallelism a rank holds num_experts / tp whole experts; else every expert, a
// 1/tp slice of its width.
double loaded_weight_bytes(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                           bool expert_parallel = false);

// The padded experts' bytes over the checkpoint's (1 where nothing is padded): what an expert
// costs in memory, and what a step that touches it reads.
double expert_padding_factor(const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                             bool expert_parallel = false);

// The activation-peak estimate alone (bytes per GPU), exposed for tests and `describe`.
double profiling_activation_bytes(const LlmSpec& llm, std::int32_t tp,
                                  std::int32_t max_num_batched_tokens, std::int32_t max_num_seqs);

}  // namespace fleetsim
