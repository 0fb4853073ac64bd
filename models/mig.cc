#include "models/mig.h"

#include <vector>

namespace fleetsim {
namespace {

struct Shape {
  std::int32_t compute;
  std::int32_t memory;
  std::int32_t instances;
};

// The profiles of each kind of GPU, largest first (MIG User Guide, "Supported MIG Profiles":
// A100 / H100 / H200 / B200 tables for 7 slices, RTX PRO 6000 Blackwell and A30 for 4).
const std::vector<Shape>& shapes(std::int32_t slices, std::int32_t& memory_total) {
  static const std::vector<Shape> kSeven = {{7, 8, 1}, {4, 4, 1}, {3, 4, 2},
                                            {2, 2, 3}, {1, 2, 4}, {1, 1, 7}};
  static const std::vector<Shape> kFour = {{4, 4, 1}, {2, 2, 2}, {1, 1, 4}};
  static const std::vector<Shape> kTwo = {{2, 2, 1}, {1, 1, 2}};
  static const std::vector<Shape> kNone;
  switch (slices) {
    case 7:
      memory_total = 8;
      return kSeven;
    case 4:
      memory_total = 4;
      return kFour;
    case 2:
      memory_total = 2;
      return kTwo;
    default:
      memory_total = 0;
      return kNone;
  }
}

}  // namespace

double MigProfile::sm_fraction() const { return static_cast<double>(compute_slices) / gpu_slices; }

double MigProfile::memory_fraction() const {
  return static_cast<double>(memory_slices) / memory_slices_total;
}

std::string MigProfile::name() const {
  return std::to_string(compute_slices) + "g, " + std::to_string(memory_slices) + "/" +
         std::to_string(memory_slices_total) + " of the memory";
}

std::optional<MigProfile> mig_profile(const GpuSpec& gpu, std::int32_t instances) {
  std::int32_t memory_total = 0;
  for (const Shape& s : shapes(gpu.mig_slices, memory_total)) {
    if (s.instances >= instances) {
      return MigProfile{s.compute, s.memory, memory_total, s.instances, gpu.mig_slices};
    }
  }
  return std::nullopt;
}

std::int32_t mig_max_instances(const GpuSpec& gpu) {
  std::int32_t memory_total = 0;
  const auto& all = shapes(gpu.mig_slices, memory_total);
  return all.empty() ? 0 : all.back().instances;
}

GpuSpec mig_instance(const GpuSpec& gpu, const MigProfile& profile) {
  GpuSpec g = gpu;
  const double sms = profile.sm_fraction();
  const double memory = profile.memory_fraction();
  g.name = gpu.name + " MIG " + std::to_string(profile.compute_slices) + "g";
  g.memory_gib = gpu.memory_gib * memory;
  g.memory_bandwidth_gbs = gpu.memory_bandwidth_gbs * memory;
  g.bf16_tflops = gpu.bf16_tflops * sms;
  g.fp8_tflops = gpu.fp8_tflops * sms;
  g.int8_tops = gpu.int8_tops * sms;
  g.fp4_tflops = gpu.fp4_tflops * sms;
  g.interconnect_gbs = 0;
  g.nvlink_gpus = 0;
  g.mig_slices = 0;
  return g;
}

}  // namespace fleetsim
