// The GPUs a pod can run on, with the datasheet figures the cost model and the KV-capacity
// computation need. Throughputs are DENSE tensor-core peaks (NVIDIA datasheets quote sparsity
// figures first: those are 2x and never reached by LLM inference kernels).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

struct GpuSpec {
  std::string name;
  // Total device memory as CUDA reports it (cudaMemGetInfo / torch.cuda.mem_get_info()[1]), in
  // GiB. This is the figure vLLM multiplies by gpu_memory_utilization, and it is a little less
  // than the nvidia-smi total (an "80GB" A100 shows 81,920 MiB in nvidia-smi but 79.25 GiB to
  // CUDA: the driver keeps the rest).
  double memory_gib = 0;
  double memory_bandwidth_gbs = 0;  // peak DRAM bandwidth, GB/s (10^9 bytes/s)
  double bf16_tflops = 0;           // dense BF16 tensor-core peak, 10^12 FLOP/s
  double fp8_tflops = 0;            // dense FP8 tensor-core peak; 0 = no FP8 tensor cores
  double int8_tops = 0;             // dense INT8 tensor-core peak, 10^12 op/s
  double fp4_tflops = 0;            // dense FP4 tensor-core peak (Blackwell); 0 = none
  // Per-direction GPU-to-GPU link bandwidth, GB/s: NVLink where the part has it, else PCIe.
  // The default bandwidth of tensor-parallel all-reduces.
  double interconnect_gbs = 0;
  // Per-direction bandwidth of the GPU's link to host memory (PCIe), GB/s: what KV blocks
  // offloaded to the host load back over.
  double host_link_gbs = 0;
  std::string source;  // the datasheet the figures come from
  // CUDA compute capability (8.0 Ampere A100, 8.6 A10, 8.9 Ada, 9.0 Hopper, 10.0 Blackwell
  // B200, 12.0 Blackwell RTX); 0 = unknown. It picks the kernels vLLM runs where they impose
  // something the simulation sees (the KV block size of latent attention).
  double compute_capability = 0;
  // MIG: the compute slices a GPU instance profile counts (7 on A100, H100, H200, B200; 4 on
  // the RTX PRO 6000 Blackwell; 2 on an RTX PRO 5000), 0 when the GPU has no MIG (L40S, L4,
  // A10). NVIDIA Multi-Instance GPU User Guide, "Supported GPUs" and "Supported MIG Profiles".
  std::int32_t mig_slices = 0;
  // The fraction of the peak DRAM bandwidth a weight-streaming step reaches on this part, where
  // a public profile measured it (models/cost_model_profile_test.cc); 0 = not measured, the cost
  // model's pooled default.
  double bandwidth_efficiency = 0;
  // How many of these GPUs NVLink connects all to all: 8 on an HGX board (NVSwitch), 2 where a
  // bridge pairs them (H100 NVL), 0 on PCIe alone. vLLM runs its custom all-reduce only within
  // such a domain or between two GPUs; past it, NCCL (cost_model.h, kNcclPcieLatencyUs).
  std::int32_t nvlink_gpus = 0;
};

// The catalog, in a fixed order.
const std::vector<GpuSpec>& gpu_catalog();

// The entry named `name`; throws UnknownNameError("GPU", name, valid names) if there is none.
const GpuSpec& find_gpu(const std::string& name);
// Same, looking first among `extra` (a scenario's own GPU definitions, fleet.gpus).
const GpuSpec& find_gpu(const std::vector<GpuSpec>& extra, const std::string& name);

std::vector<std::string> gpu_names();

}  // namespace fleetsim
