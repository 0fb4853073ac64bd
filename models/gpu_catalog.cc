#include "models/gpu_catalog.h"

#include "sim/named.h"

namespace fleetsim {

namespace {

// Memory: the CUDA-visible total (what vLLM's memory profiler starts from), as PyTorch prints
// it in out-of-memory messages ("GPU 0 has a total capacity of X GiB"). Cross-check for the A100:
// vLLM on an 80 GB A100 with Qwen3-0.6B (1.12 GiB of weights) at utilization 0.9 reports 69.66
// GiB of KV cache (vllm-project/vllm PR #24577), which needs a total near 79.25 GiB, not 80.
//
// Throughput: NVIDIA datasheets print "X | Y*" with * = with sparsity; we keep the dense X.
//
// Host link: PCIe x16 per direction, Gen4 32 GB/s (A100, L40S, L4, A10), Gen5 64 GB/s (H100,
// H200, RTX PRO 6000, B200), from the same datasheets.
//
// Compute capability (the figure after the source): NVIDIA's CUDA GPUs table
// (developer.nvidia.com/cuda-gpus): A100 8.0, A10 8.6, L40S and L4 8.9, H100 and H200 9.0, B200
// 10.0, RTX PRO 6000 Blackwell 12.0.
//
// MIG slices (the figure after it): the NVIDIA Multi-Instance GPU User Guide's "Supported GPUs"
// table: at most 7 instances on A100, H100 (SXM5, PCIe, 94 GB NVL), H200 and B200, at most 4 on
// the RTX PRO 6000 Blackwell; L40S, L4 and A10 are not listed.
//
// Bandwidth efficiency (the last figure, where there is one): Vidur's per-operator profiles
// (microsoft/vidur data/profiling/compute, shared/data/profiles) time the linear layers of
// 1-8-token steps, which stream their weights: at the shared 4.2 us kernel floor they reach 0.78
// of the A100-80GB-SXM's peak (HBM2e; 4 models, TP 1-8) and 0.90 of the H100-SXM's (HBM3; 2
// models, TP 1-8). The A100 PCIe shares the SXM part's memory system, and the H100 NVL and the
// H200 (HBM3 and HBM3e) the H100 SXM's, so they take those values. The H100 PCIe (HBM2e behind
// Hopper's controllers) and the other parts were not profiled: the cost model's pooled 0.82.
std::vector<GpuSpec> make_catalog() {
  return {
      // NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web):
      // A100 80GB PCIe: HBM2e 1,935 GB/s, BF16 312 TF, INT8 624 TOPS, PCIe Gen4 64 GB/s (both
      // directions; NVLink bridge optional, not assumed). No FP8 tensor cores (Ampere).
      // Memory 79.25 GiB: PyTorch OOM text on 80 GB A100s (e.g. levihsu/OOTDiffusion#235).
      {"A100-80GB-PCIe", 79.25, 1935, 312, 0, 624, 0, 32, 32,
       "NVIDIA A100 Tensor Core GPU datasheet (80GB PCIe column)", 8.0, 7, 0.78},
      // Same datasheet, A100 80GB SXM: 2,039 GB/s, NVLink 600 GB/s (300 GB/s each way).
      {"A100-80GB-SXM", 79.25, 2039, 312, 0, 624, 0, 300, 32,
       "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM column)", 8.0, 7, 0.78, 8},
      // NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: 80 GB HBM3 3.35 TB/s, BF16 1,979*,
      // FP8 3,958*, INT8 3,958* (sparse) -> 989.4 / 1,978.9 / 1,978.9 dense; NVLink 900 GB/s.
      // Memory 79.11 GiB: PyTorch OOM text on an H100 in vllm-project/vllm#27508.
      {"H100-SXM", 79.11, 3350, 989.4, 1978.9, 1978.9, 0, 450, 64,
       "NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column)", 9.0, 7, 0.90, 8},
      // Same datasheet, H100 PCIe: 80 GB HBM2e 2.0 TB/s, BF16 1,513*, FP8 3,026*, INT8 3,026*
      // -> 756.5 / 1,513 / 1,513 dense; PCIe Gen5 128 GB/s (64 each way; an NVLink bridge is
      // optional, not assumed). Memory: the same 81,559 MiB framebuffer as the SXM part, so the
      // SXM's CUDA total (79.11 GiB).
      {"H100-PCIe", 79.11, 2000, 756.5, 1513, 1513, 0, 64, 64,
       "NVIDIA H100 Tensor Core GPU datasheet (H100 PCIe column)", 9.0, 7},
      // NVIDIA H100 NVL product brief (PB-11773-001): 94 GB HBM3 3.9 TB/s, BF16 1,671*, FP8
      // 3,341*, INT8 3,341*; sold as bridged pairs, NVLink bridge 600 GB/s (300 each way).
      // Memory 93.00 GiB: PyTorch OOM text on an H100 NVL (ali-vilab/VACE#56).
      {"H100-NVL", 93.00, 3900, 835.5, 1670.5, 1670.5, 0, 300, 64,
       "NVIDIA H100 NVL product brief PB-11773-001", 9.0, 7, 0.90, 2},
      // NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: 141 GB HBM3e 4.8 TB/s, same tensor
      // cores as H100 SXM (BF16 1,979*, FP8 3,958*, INT8 3,958*), NVLink 900 GB/s.
      // Memory 139.80 GiB: PyTorch OOM text on H200s (nvidia-smi shows 143,771 MiB).
      {"H200", 139.80, 4800, 989.4, 1978.9, 1978.9, 0, 450, 64,
       "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column)", 9.0, 7, 0.90, 8},
      // NVIDIA RTX PRO 6000 Blackwell (Workstation / Server Edition) datasheet: GB202 (SM120),
      // 188 SMs, 96 GB GDDR7 ECC at 1,792 GB/s, "4 PFLOPS" FP4 AI (sparse), PCIe Gen5 x16.
      // Dense BF16 = 188 SMs x 2.617 GHz x 1,024 FLOP/clk = 503.8 TF (full-rate FP32
      // accumulate on the professional parts); FP8 and INT8 twice that; FP4 4x = 2,015 dense,
      // 4,030 sparse, which is the datasheet's 4 PFLOPS. Memory 94.97 GiB: PyTorch OOM text on
      // these cards (nvidia-smi shows 97,887 MiB).
      {"RTX-PRO-6000", 94.97, 1792, 503.8, 1007.6, 1007.6, 2015.2, 64, 64,
       "NVIDIA RTX PRO 6000 Blackwell datasheet; dense rates derived from SM count and clock", 12.0,
       4},
      // NVIDIA L40S datasheet: 48 GB GDDR6 ECC 864 GB/s, BF16 362.05 | 733*, FP8 733 | 1,466*,
      // INT8 733 | 1,466*, PCIe Gen4 x16. Memory 44.40 GiB: PyTorch OOM text on 48 GB L40S
      // (nvidia-smi shows 46,068 MiB).
      {"L40S", 44.40, 864, 362.05, 733, 733, 0, 32, 32, "NVIDIA L40S datasheet", 8.9},
      // NVIDIA HGX B200 specifications: 180 GB HBM3e at 7.7 TB/s per GPU, BF16 4.5 PF*, FP8
      // 9 PF*, INT8 9 POPS*, FP4 18 PF* (144 PF* for eight) -> 2,250 / 4,500 / 4,500 / 9,000
      // dense; NVLink 5 1.8 TB/s (900 each way).
      // Memory 178.35 GiB: PyTorch OOM text on a B200 (stas00/ml-engineering debug/pytorch.md;
      // cudaDeviceProp in pytorch/ao PR #4002).
      {"B200", 178.35, 7700, 2250, 4500, 4500, 9000, 900, 64, "NVIDIA HGX B200 specifications",
       10.0, 7, 0, 8},
      // NVIDIA L4 Tensor Core GPU datasheet: 24 GB GDDR6 300 GB/s, BF16 242*, FP8 485*, INT8
      // 485* -> 121 / 242.5 / 242.5 dense; PCIe Gen4 x16. Memory 22.03 GiB: PyTorch OOM text on
      // L4s (GCP, Modal; AWS g6 drivers report 21.96).
      {"L4", 22.03, 300, 121, 242.5, 242.5, 0, 32, 32, "NVIDIA L4 Tensor Core GPU datasheet", 8.9},
      // NVIDIA A10 Tensor Core GPU datasheet: 24 GB GDDR6 600 GB/s, BF16 250*, INT8 500* -> 125 /
      // 250 dense, no FP8 tensor cores (Ampere); PCIe Gen4 x16. Memory 21.99 GiB: PyTorch OOM
      // text on an A10 (vllm-project/vllm#16128).
      {"A10", 21.99, 600, 125, 0, 250, 0, 32, 32, "NVIDIA A10 Tensor Core GPU datasheet", 8.6},
  };
}

}  // namespace

const std::vector<GpuSpec>& gpu_catalog() {
  static const std::vector<GpuSpec> kCatalog = make_catalog();
  return kCatalog;
}

std::vector<std::string> gpu_names() { return entry_names(gpu_catalog()); }

const GpuSpec& find_gpu(const std::string& name) { return find_entry(gpu_catalog(), "GPU", name); }

const GpuSpec& find_gpu(const std::vector<GpuSpec>& extra, const std::string& name) {
  return find_entry_in(extra, gpu_catalog(), "GPU", name);
}

}  // namespace fleetsim
