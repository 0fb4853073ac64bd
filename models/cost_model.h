// The time of ONE engine step from the shape of its batch. Two forms:
//  - roofline: max(FLOPs / (eta_c x peak), bytes / (eta_m x bandwidth)) + all-reduce + overhead,
//    from the GPU and model catalogs; efficiencies calibrated on public per-operator profiles;
//  - fitted: a + b.sum(l) + c.sum(l^2) for prefills, a + b.sum(ctx) + c.batch for decodes, with
//    coefficients a user fitted (least squares) to their own measurements.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/params.h"
#include "sim/time.h"

namespace fleetsim {

// One request's share of a step.
struct BatchEntry {
  std::int32_t new_tokens = 0;  // tokens computed this step (1 for a decode, a chunk for prefill)
  // Tokens already in the KV cache for this request before this step (prefix hits + earlier
  // chunks + decoded tokens).
  std::int32_t context_tokens = 0;
  // A decode that verifies speculative drafts (1 + drafts new tokens): attention kernels treat
  // it as a decode, not as a prefill chunk.
  bool verifies_drafts = false;
  bool is_decode() const { return new_tokens == 1 || verifies_drafts; }
};

// What a step's kernels keep busy, each as a fraction of the step's GPU time: the SMs'
// arithmetic and the DRAM bandwidth. Processes sharing a GPU through MPS run their kernels at
// once, so a compute-bound step and a memory-bound one overlap where time-slicing would take
// turns. {1, 1}: the step is taken to keep both busy throughout.
struct GpuDemand {
  double compute = 1;
  double memory = 1;
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  // Duration of one step running `batch`; an empty batch takes no time.
  virtual TimeNs step_time(std::span<const BatchEntry> batch) const = 0;
  virtual std::string describe() const = 0;
  // The share of every step that is host (CPU) work: scheduling, input preparation, sampling.
  // Async scheduling overlaps it with the previous step's GPU work.
  virtual TimeNs host_overhead() const { return 0; }
  // What `batch`'s step keeps busy on the GPU; a model that does not know says {1, 1}.
  virtual GpuDemand gpu_demand(std::span<const BatchEntry> /*batch*/) const { return {}; }
  // True when gpu_demand() is worked out from the batch, not the {1, 1} of not knowing.
  virtual bool knows_gpu_demand() const { return false; }
};

// One step's duration when the host work of the next step overlaps this one's GPU work (vLLM
// --async-scheduling): the slower of the two sets the pace.
TimeNs overlapped_step_time(TimeNs step, TimeNs host);

// Calibrated defaults, shared by every scenario (see cost_model.cc for the derivations).
inline constexpr double kDefaultComputeEfficiency = 0.73;
// Pooled over every profiled curve; a GPU whose own profile measured it (GpuSpec::
// bandwidth_efficiency) uses its own (bandwidth_efficiency_for).
inline constexpr double kDefaultBandwidthEfficiency = 0.82;
inline constexpr double kDefaultStepOverheadMs = 1.5;
// A step's arithmetic and its DRAM traffic overlap imperfectly: this fraction of the shorter of
// the two is not hidden behind the longer (steps near the roofline's ridge run up to 1.5 times
// max(compute, memory) in the Vidur profiles).
inline constexpr double kDefaultUnoverlappedFraction = 0.62;
// Fixed time of each linear-layer kernel beyond streaming its weights (launch, ramp-up, tail):
// what makes the small per-GPU matrices of high tensor-parallel sizes slower than their bytes.
inline constexpr double kDefaultKernelFloorUs = 4.2;
// The element-wise kernels between the GEMMs (the fused residual-add RMSNorms, rotary embedding,
// SiLU-and-mul) stream the step's activations through DRAM, one after another, at this fraction
// of peak bandwidth: 0.47 on the A100 and 0.50 on the H100 in Vidur's profiles of those kernels,
// 0.48 pooled over every curve of 1,024 tokens and more (models/cost_model_profile_test.cc).
inline constexpr double kDefaultElementwiseEfficiency = 0.48;
// Weight-only quantized GEMMs that dequantize inside the kernel (Marlin: INT4 W4A16, FP8 weights
// on a GPU without FP8 tensor cores) against dense BF16 GEMMs, once a step is compute-bound.
// Measured for Marlin INT4 on an A100 (vllm-project/vllm#2497); the FP8 and FP4 Marlin variants
// share its structure.
inline constexpr double kDefaultDequantGemmFactor = 0.62;
// A mixture of experts' expert GEMMs (vLLM's fused-MoE kernels: the step's rows sorted by
// expert, each expert's few rows multiplied as a group) against dense GEMMs, once compute-bound.
// vllm-project/vllm#44818 times the whole fused-MoE block of a 128-expert layer (Gemma 4: hidden
// 2,816, experts 704 wide, 8 a token; tuned BF16 configs, an H200) at 728 us for 2,048 tokens and
// 1,190 us for 4,096. Under this roofline (its 1.52 GB of experts at 0.90 of 4.8 TB/s, 0.62 of
// the shorter time unoverlapped) that arithmetic runs at 0.39 and 0.41 of peak, 0.53 and 0.56 of
// the dense 0.73. Wider experts do better (Mixtral's 7,168 on an H100, #24700: ~0.9 of dense);
// today's mixtures (Qwen3, DeepSeek, GLM, gpt-oss) have narrow, fine-grained experts, and
// tensor parallelism narrows them further, so we take the fine-grained figure.
inline constexpr double kDefaultMoeGemmFactor = 0.55;
// The fused-MoE block's kernels besides its two grouped GEMMs (top-k routing, sorting the step's
// token-expert pairs by expert, SiLU-and-mul, the weighted top-k sum): their fixed time a layer.
// vLLM's benchmark_moe.py times the whole block inside CUDA graphs; at one token, what it takes
// beyond the touched experts' bytes (at the GPU's bandwidth efficiency) and two kernel floors is
// 18.8 us (Mixtral at TP 2, BF16, H100: 144.0 us, vllm-project/vllm#24700), 19.5 us (Qwen3-30B-A3B
// FP8, H100: 40.4 us, #24700), 18.9 us (Qwen3-235B-A22B at TP 8, FP8, H200: 31.7 us,
// sgl-project/sglang#11730) and 38.6 us (Qwen3-30B-A3B BF16, A100 PCIe 40GB: 109.2 us,
// vllm-project/vllm#19049). We take 20 us, the three that agree.
inline constexpr double kDefaultMoeRoutingUs = 20.0;
// A tensor-parallel all-reduce's fixed cost, whatever its size: vLLM's custom all-reduce on an
// H100 node takes 8.5 to 11.8 us for 512 B to 32 KB at TP 2, 4 and 8 (9.1, 8.5 and 9.2 us at
// TP 4), measured without CUDA graphs (sgl-project/sglang#2904). Decode steps of a few dozen
// tokens send messages that small, so this, not the link bandwidth, sets their all-reduce time.
inline constexpr double kDefaultAllreduceLatencyUs = 9.0;

// The roofline's revision: raised whenever a term is added or changed, so that a calibration
// file fitted against an earlier one (its fit.cost_model_revision, absent before revision 3) can
// be told apart; its efficiencies absorbed what the roofline then left out.
// 1: linear layers, attention, weights and KV, the kernel floor, all-reduces, step overhead.
// 2: the element-wise kernels between the GEMMs; each profiled GPU's own bandwidth efficiency.
// 3: Qwen3's per-head query and key norms and MLA's latent norms among the element-wise bytes.
// 4: a mixture of experts' expert GEMMs at moe_gemm_factor of dense; FP8 experts at 1.15x BF16.
// 5: an MoE layer's fixed kernel time: its router's and shared expert's GEMMs among the linear
//    kernels, and the fused-MoE block's routing kernels (moe_routing_us).
inline constexpr int kRooflineRevision = 5;
// What the roofline charges since `revision` that a file fitted then did not take off its steps,
// for `llm` (nullptr: for any model); "" when nothing.
std::string roofline_changes_since(int revision, const LlmSpec* llm = nullptr);

// How a tensor-parallel pod's GPUs reach each other for its all-reduces.
// kP2p: peer to peer (NVLink, or PCIe where the platform allows it): the GPU catalog's link and
// vLLM's custom all-reduce. kHost: no peer-to-peer path (vLLM logs "Custom allreduce is disabled
// because your platform lacks GPU P2P capability"; common in VMs and containers), so NCCL stages
// every all-reduce through host memory (its SHM transport), where the CPU's memory system, not
// the PCIe link, sets the pace.
enum class AllreducePath { kP2p, kHost };
// NCCL's SHM transport between PCIe GPUs: 9 or 6 GB/s, where a path that stays inside a PCIe
// switch would give 12 (NCCL's maintainer, NVIDIA/nccl#406). We take his lower figure. The
// measurements we found are at or below it: all-reduce bus bandwidth of 5.2 GB/s at 1 GB on four
// A100s with NCCL_P2P_DISABLE=1 (eugenesiow/LLM-Insights, infrastructure/hardware/README.md), 4.0
// on two Gen3 RTX 2080 Ti (below), 2.3 on two A100 PCIe in a cloud machine (adamdivak/distrain,
// docs/decisions.md). The host's memory system sets it: measure yours with nccl-tests'
// all_reduce_perf and set allreduce_bandwidth_gbs.
inline constexpr double kHostAllreduceBusGbs = 6.0;
// nccl-tests all_reduce_perf over SHM between two PCIe GPUs without P2P: 12.1 to 13.1 us for 8 B
// to 8 KB (Anthony-Hoo.github.io, posts/AutoDL_Multi-GPU_Interconnection_Test.md).
inline constexpr double kHostAllreduceLatencyUs = 12.0;
// vLLM runs its custom all-reduce where the GPUs reach each other over NVLink, and over PCIe
// only between two ("Custom allreduce is disabled because it's not supported on more than two
// PCIe-only GPUs", vllm/distributed/device_communicators/custom_all_reduce.py), so a pod of more
// than two PCIe GPUs all-reduces through NCCL's ring. Its small-message floor on eight RTX PRO
// 6000s: 18.0 us at 1-8 KB on two EPYC 9124s with P2P forced, 24.1-24.6 us up to 64 KB behind
// PCIe switches on one CPU, 28.6 us at 256 B on two EPYC 9575Fs at NCCL's defaults
// (voipmonitor/rtx6kpro, hardware/epyc9124-direct-attach.md, pcie-bandwidth.md,
// asus-esc8000a-e13p-broadcom-switches.md). We take 25 us.
inline constexpr double kNcclPcieLatencyUs = 25.0;
// Its bus bandwidth at NCCL's defaults over eight PCIe GPUs: 19.7 GB/s at 32 MB on two EPYC 9575Fs
// behind switches, 22.2 GB/s at 32 MB on two EPYC Turins (the same repository), 28 GB/s at 1 GB
// and more on eight RTX 5090s and two Xeon 8480+ (NVIDIA/nccl#1639, where NCCL's maintainer notes
// that on PCIe hosts "the performance you get is usually determined by the bandwidth your CPU and
// memory can deliver"). We take 20 GB/s, or the GPU's own link where that is slower.
inline constexpr double kNcclPcieBusGbs = 20.0;
// Over four, fewer flows share the host: 25.95 GB/s at 1 GB on four RTX 4090s with P2P
// (tinygrad/open-gpu-kernel-modules#36), 30.3 at 32 MB on four RTX PRO 6000s behind switches
// (rtx6kpro), 35 on four RTX 5090s (nccl#1639). We take the middle one, 30 GB/s, up to four GPUs.
inline constexpr double kNcclPcieBusGbsUpToFour = 30.0;
// Whether a pod of `tp` GPUs of this kind all-reduces through NCCL over PCIe (above): more than
// two GPUs, and more than NVLink connects all to all (GpuSpec::nvlink_gpus), on a platform that
// allows P2P.
bool allreduces_through_nccl_over_pcie(const GpuSpec& gpu, std::int32_t tp, AllreducePath path);
// The names a cost model's allreduce_path takes ("p2p", "host"), in the enum's order.
const std::vector<std::string>& allreduce_path_names();
// The path `name` names; throws Error listing the valid names.
AllreducePath allreduce_path_named(const std::string& name);
// A path's all-reduce latency when none is given, for `tp` GPUs of this kind: vLLM's custom
// all-reduce, NCCL over PCIe past two PCIe GPUs, or NCCL over SHM.
double default_allreduce_latency_us(AllreducePath path, const GpuSpec& gpu, std::int32_t tp);
// The same for the bus bandwidth, GB/s: the GPU's link, NCCL's over PCIe (at most the link's),
// or host memory's.
double default_allreduce_bandwidth_gbs(AllreducePath path, const GpuSpec& gpu, std::int32_t tp);

// The bandwidth efficiency a step on `gpu` streams at: `requested` when positive (a scenario's
// or calibration's value), else the GPU's measured one, else the pooled default.
double bandwidth_efficiency_for(const GpuSpec& gpu, double requested = 0);

// The roofline's constants (cost_model_spec() documents each); the defaults are the calibrated
// ones every scenario shares.
struct RooflineConstants {
  double compute_efficiency = kDefaultComputeEfficiency;
  double bandwidth_efficiency = 0;  // <= 0: bandwidth_efficiency_for(gpu)
  double step_overhead_ms = kDefaultStepOverheadMs;
  double allreduce_bandwidth_gbs = 0;  // <= 0: the path's (the catalog's link, or host memory's)
  double dequant_gemm_factor = kDefaultDequantGemmFactor;
  double moe_gemm_factor = kDefaultMoeGemmFactor;
  double allreduce_latency_us = 0;  // <= 0: the path's (default_allreduce_latency_us)
  AllreducePath allreduce_path = AllreducePath::kP2p;
  double unoverlapped_fraction = kDefaultUnoverlappedFraction;
  double kernel_floor_us = kDefaultKernelFloorUs;
  double elementwise_efficiency = kDefaultElementwiseEfficiency;
  double moe_routing_us = kDefaultMoeRoutingUs;
  // vLLM's --enable-expert-parallel (without data parallelism): each of the tp GPUs holds
  // 1/tp of the experts whole, attention stays split; the all-reduces are the same.
  bool expert_parallel = false;
};

// The expected largest of n independent standard normal draws (0 for n <= 1).
double expected_max_standard_normal(std::int32_t n);

// Linear-layer kernels a layer launches: QKV, output projection, gate/up, down (an MoE layer's
// two grouped expert GEMMs take the MLP's two places).
inline constexpr double kLinearKernelsPerLayer = 4.0;
// Linear kernels an MoE layer launches besides those: its router's GEMM, and its shared expert's
// gate/up and down where it has one.
double extra_linear_kernels_per_moe_layer(const LlmSpec& llm);

class RooflineCostModel : public CostModel {
 public:
  RooflineCostModel(GpuSpec gpu, LlmSpec llm, std::int32_t tp, RooflineConstants k = {},
                    std::int32_t kv_dtype_bytes = 2);

  // Per-GPU quantities of one step, for tests and diagnostics.
  struct Breakdown {
    double flops = 0;            // per GPU
    double bytes = 0;            // per GPU, DRAM traffic
    double compute_ms = 0;       // FLOPs at the effective peak(s)
    double memory_ms = 0;        // bytes at the effective bandwidth, plus the kernels' floor
    double kernel_floor_ms = 0;  // of memory_ms: the kernels' fixed time (linear, MoE routing)
    double allreduce_ms = 0;     // tensor-parallel all-reduces (0 at tp = 1)
    double overhead_ms = 0;      // fixed per-step cost
    double elementwise_ms = 0;   // activations through the norms, rotary, SiLU-and-mul
    double gpu_ms = 0;           // max(compute, memory) + unoverlapped x min + element-wise
    double total_ms = 0;         // gpu_ms + all-reduce + overhead
  };
  Breakdown breakdown(std::span<const BatchEntry> batch) const;
  // The kernels' fixed time of one step, ms (part of every step's memory_ms): each linear
  // kernel's floor, and each MoE layer's routing kernels.
  double kernel_floor_ms() const;
  // DRAM bytes per token, per GPU, that the element-wise kernels of every layer move.
  double elementwise_bytes_per_token() const { return elementwise_bytes_per_token_; }
  // The fraction of min(compute, memory) a step does not overlap: the constant's, except where
  // the linear layers dequantize their weights (Marlin; MXFP4's Triton and FlashInfer kernels
  // too, docs/calibration.md), whose kernels hide the weight loads behind the arithmetic.
  double unoverlapped_fraction() const;

  TimeNs step_time(std::span<const BatchEntry> batch) const override;
  std::string describe() const override;
  TimeNs host_overhead() const override { return ms_to_ns(k_.step_overhead_ms); }
  // compute_ms and memory_ms over the GPU's part of the step (gpu_ms + all-reduce).
  GpuDemand gpu_demand(std::span<const BatchEntry> batch) const override;
  bool knows_gpu_demand() const override { return true; }

  // Peak (TFLOP/s) the linear layers run at: the tensor cores of the weights' type (FP8, INT8,
  // FP4) where the GPU has them, BF16 otherwise (INT4 W4A16 always, and FP8 on Ampere or FP4
  // before Blackwell, which vLLM's Marlin kernels dequantize to BF16 inside the GEMM).
  double linear_peak_tflops() const;
  // The peak a mixture of experts' expert GEMMs run at: the linear one, but FP8 experts on FP8
  // tensor cores gain only 1.15x over BF16 in vLLM's fused-MoE kernel.
  double expert_peak_tflops() const;
  // True when the linear layers dequantize their weights inside the GEMM (quantized weights,
  // no tensor cores for their type), which then run at dequant_gemm_factor of a BF16 GEMM.
  bool dequantizes_weights() const;
  bool is_moe() const { return llm_.is_moe(); }
  // Weight bytes a step of `tokens` tokens streams from DRAM, per GPU: everything but the
  // embedding table, and of an MoE model's experts only those its tokens were routed to.
  double weight_bytes_per_step(double tokens = 1) const;
  // Rows an MoE layer's expert GEMMs compute for a step of `tokens` tokens, padding included
  // (tokens x experts_per_token of them are real); 0 for a dense model.
  double moe_padded_rows(double tokens) const;
  // Under expert parallelism, how much more than its 1/tp share the most loaded GPU gets when
  // `items` (experts touched, or token-expert pairs) fall on the tp GPUs at random; 1 without.
  double expert_parallel_imbalance(double items) const;

 private:
  // Experts of one MoE layer that a step of `tokens` tokens reaches, on average.
  double experts_touched(double tokens) const;

  GpuSpec gpu_;
  LlmSpec llm_;
  std::int32_t tp_;
  RooflineConstants k_;                     // allreduce_bandwidth_gbs resolved to the link's
  std::int64_t kv_bytes_per_token_layer_;   // per GPU
  double elementwise_bytes_per_token_ = 0;  // per GPU, every layer
  double max_normal_tp_ = 0;                // expected_max_standard_normal(tp), where EP uses it
  double expert_padding_ = 1;  // the kernel's padded experts over the checkpoint's (MXFP4)
};

struct FittedCoefficients {
  double prefill_a_ms = 0;
  double prefill_b_ms_per_token = 0;
  double prefill_c_ms_per_token2 = 0;
  double decode_a_ms = 0;
  double decode_b_ms_per_ctx_token = 0;
  double decode_c_ms_per_seq = 0;
};

// Prefill entries (new_tokens > 1) cost a + b.sum(l) + c.sum(l^2) with l their new tokens;
// decode entries (new_tokens == 1) cost a + b.sum(ctx) + c.batch with ctx their context tokens
// and batch their count. A mixed batch pays both parts; each part's `a` is paid once per step.
class FittedCostModel : public CostModel {
 public:
  explicit FittedCostModel(FittedCoefficients c) : c_(c) {}
  double step_time_ms(std::span<const BatchEntry> batch) const;
  TimeNs step_time(std::span<const BatchEntry> batch) const override;
  std::string describe() const override;
  const FittedCoefficients& coefficients() const { return c_; }

 private:
  FittedCoefficients c_;
};

// The one spec of the cost-model parameters (type, efficiencies, overhead, all-reduce
// bandwidth, fitted coefficients), with the calibrated defaults.
const ParamSpec& cost_model_spec();

// Builds the model `params` names ("roofline" or "fitted"); an unknown type throws
// UnknownNameError listing the valid ones; tp < 1 throws ScenarioError.
std::unique_ptr<CostModel> make_cost_model(const Params& params, const GpuSpec& gpu,
                                           const LlmSpec& llm, std::int32_t tp,
                                           std::int32_t kv_dtype_bytes = 2,
                                           bool expert_parallel = false);

}  // namespace fleetsim
