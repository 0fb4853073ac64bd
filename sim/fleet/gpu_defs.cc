#include "sim/fleet/gpu_defs.h"

#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/fleet/definitions.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

const ParamSpec& gpu_def_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("name", "", "the name fleet.gpu and pools use (not a catalog name)")
          .real("memory_gib", 0,
                "device memory as CUDA reports it, GiB (torch.cuda.mem_get_info()[1], or the "
                "'total capacity' of a PyTorch out-of-memory message; a little under the "
                "nvidia-smi total)",
                0, 1e5)
          .real("memory_bandwidth_gbs", 0, "peak DRAM bandwidth, GB/s (datasheet)", 0, 1e6)
          .real("bf16_tflops", 0, "dense BF16 tensor-core peak, TFLOP/s (half a sparse figure)", 0,
                1e6)
          .real("fp8_tflops", 0, "dense FP8 tensor-core peak, TFLOP/s; 0 = no FP8 tensor cores", 0,
                1e6)
          .real("int8_tops", 0,
                "dense INT8 tensor-core peak, TOP/s; 0 = none (INT8 W8A8 models then dequantize)",
                0, 1e6)
          .real("fp4_tflops", 0,
                "dense FP4 tensor-core peak, TFLOP/s (Blackwell); 0 = none (FP4 models then "
                "dequantize)",
                0, 1e6)
          .real("interconnect_gbs", 0,
                "GPU-to-GPU bandwidth per direction, GB/s (NVLink, else PCIe); 0 = none, which "
                "rules out tensor_parallel_size > 1 unless cost_model.allreduce_bandwidth_gbs "
                "is set",
                0, 1e6)
          .real("host_link_gbs", 0,
                "bandwidth of the GPU's link to host memory (PCIe) per direction, GB/s; needed "
                "only by KV offloading (server.kv_offloading_size_gib) unless "
                "server.kv_offload_bandwidth_gbs is set",
                0, 1e6)
          .real("compute_capability", 0,
                "CUDA compute capability (9.0 Hopper, 10.0 B200, 12.0 RTX Blackwell); 0 = "
                "unknown. It sets the KV block size vLLM's latent-attention kernels impose",
                0, 100)
          .integer(
              "mig_slices", 0,
              "MIG compute slices (7 on A100/H100/H200/B200, 4 on RTX PRO 6000 Blackwell, 2 on "
              "RTX PRO 5000; NVIDIA MIG User Guide); 0 = no MIG",
              0, 7)
          .real("bandwidth_efficiency", 0,
                "fraction of the peak DRAM bandwidth a weight-streaming decode step reaches, "
                "where you measured it; 0 = the cost model's pooled 0.82",
                0, 1)
          .integer("nvlink_gpus", 0,
                   "how many of these GPUs NVLink connects all to all (8 on an HGX board with "
                   "NVSwitch, 2 for bridged pairs); 0 = PCIe only. A tensor-parallel pod larger "
                   "than this and than two all-reduces through NCCL, not vLLM's custom kernel",
                   0, 576)
          .text("source", "", "where the figures come from (the datasheet), for the record");
  return kSpec;
}

namespace {

GpuSpec parse_one(const YAML::Node& n, const YamlWhere& w) {
  const Params p = gpu_def_spec().resolve(n, w);
  GpuSpec g;
  g.name = p.get_string("name");
  if (g.name.empty()) {
    throw ScenarioError(w.child("name").at(n) +
                        ": missing field 'name' (the name fleet.gpu "
                        "refers to)");
  }
  for (const char* f : {"memory_gib", "memory_bandwidth_gbs", "bf16_tflops"}) {
    if (p.get_double(f) <= 0) {
      throw ScenarioError(w.child(f).at(n) + ": missing field '" + f +
                          "' (a number > 0, from the GPU's datasheet; fleetsim describe gpu)");
    }
  }
  g.memory_gib = p.get_double("memory_gib");
  g.memory_bandwidth_gbs = p.get_double("memory_bandwidth_gbs");
  g.bf16_tflops = p.get_double("bf16_tflops");
  g.fp8_tflops = p.get_double("fp8_tflops");
  g.int8_tops = p.get_double("int8_tops");
  g.fp4_tflops = p.get_double("fp4_tflops");
  g.interconnect_gbs = p.get_double("interconnect_gbs");
  g.host_link_gbs = p.get_double("host_link_gbs");
  g.compute_capability = p.get_double("compute_capability");
  g.mig_slices = static_cast<std::int32_t>(p.get_int("mig_slices"));
  g.bandwidth_efficiency = p.get_double("bandwidth_efficiency");
  g.nvlink_gpus = static_cast<std::int32_t>(p.get_int("nvlink_gpus"));
  if (g.mig_slices != 0 && g.mig_slices != 2 && g.mig_slices != 4 && g.mig_slices != 7) {
    throw ScenarioError(w.child("mig_slices").at(n["mig_slices"]) +
                        ": expected 0, 2, 4 or 7 (the "
                        "compute slices of a MIG-capable GPU), got " +
                        std::to_string(g.mig_slices));
  }
  g.source = p.get_string("source");
  return g;
}

}  // namespace

std::vector<GpuSpec> parse_gpu_defs(const YAML::Node& list, const YamlWhere& where) {
  return parse_definitions<GpuSpec>(
      list, where, "GPU", "fleetsim list gpus",
      "{name, memory_gib, memory_bandwidth_gbs, bf16_tflops, ...} (fleetsim describe gpu)",
      gpu_names(), parse_one);
}

}  // namespace fleetsim
