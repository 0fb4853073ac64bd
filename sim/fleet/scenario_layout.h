// The keys that place a fleet's (or a pool's) pods on GPUs and nodes: pods per GPU, how
// co-located pods share a GPU (time-slicing, MPS, MIG) and GPUs per node; and the checks of a
// pool's layout that need its server and cost model resolved.
#pragma once

#include <cstdint>
#include <string>

#include "sim/fleet/scenario.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// pods_per_gpu, gpu_sharing and mps_active_thread_percentage, with these defaults (a pool's are
// the fleet's values).
ParamSpec gpu_layout_spec(std::int64_t pods_per_gpu, const std::string& sharing,
                          std::int64_t mps_percentage);
GpuSharing sharing_of(const Params& layout);

// Errors name the file, line and field of `n` (the fleet or the pool at `w`): co-located vLLMs'
// memory fractions over the GPU; MPS without the roofline; an SM cap without MPS; MIG on a GPU
// without it, past its instances, or with tensor parallelism.
// server.vllm_version names a release (file, line and field on error).
void check_vllm_version(const YAML::Node& n, const YamlWhere& w, const Params& server);
void check_gpu_share(const YAML::Node& n, const YamlWhere& w, std::int32_t pods_per_gpu,
                     GpuSharing sharing, const Params& server);
void check_gpu_sharing(const YAML::Node& n, const YamlWhere& w, const PoolSpec& pool,
                       const FleetSpec& f);
// The fleet-level part of the checks, for a fleet with pools: an SM cap without MPS.
void check_sm_cap(const YAML::Node& n, const YamlWhere& w, GpuSharing sharing,
                  std::int32_t mps_percentage);

}  // namespace fleetsim
