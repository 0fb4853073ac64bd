// NVIDIA Multi-Instance GPU: a GPU cut into instances, each a fixed slice of the SMs and of the
// memory (its capacity and its bandwidth: a memory slice comes with its own memory controllers
// and L2), isolated from the others. The profiles are those of the MIG User Guide ("Supported MIG
// Profiles"). On a GPU of 7 compute slices memory comes in eighths: 1g with 1/8 (7 instances),
// 1g with 2/8 (4), 2g with 2/8 (3), 3g with 4/8 (2), 4g with 4/8 (1), 7g with all (1). On 4
// slices it comes in quarters: 1g (4 instances), 2g (2), 4g (1). On 2 slices, in halves.
// The guide's fractions are nominal: in MIG mode a few SMs of the full GPU stay unused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/gpu_catalog.h"

namespace fleetsim {

struct MigProfile {
  std::int32_t compute_slices = 0;  // of GpuSpec::mig_slices
  std::int32_t memory_slices = 0;   // of memory_slices_total
  std::int32_t memory_slices_total = 0;
  std::int32_t max_instances = 0;  // of this profile on one GPU
  std::int32_t gpu_slices = 0;     // the GPU's compute slices

  double sm_fraction() const;
  double memory_fraction() const;
  std::string name() const;  // "3g, 4/8 of the memory"
};

// The profile each of `instances` identical instances of `gpu` gets: the largest of which that
// many fit on one GPU (a single-profile layout, like the GPU operator's "all-3g.40gb"). None when
// the GPU has no MIG, or cannot hold that many instances.
std::optional<MigProfile> mig_profile(const GpuSpec& gpu, std::int32_t instances);

// The most instances `gpu` can be cut into (0: no MIG).
std::int32_t mig_max_instances(const GpuSpec& gpu);

// One instance as a GPU of its own: its share of the memory, the bandwidth and every tensor-core
// peak; no GPU-to-GPU link (MIG instances do not talk peer to peer).
GpuSpec mig_instance(const GpuSpec& gpu, const MigProfile& profile);

}  // namespace fleetsim
