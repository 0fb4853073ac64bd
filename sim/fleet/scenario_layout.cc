#include "sim/fleet/scenario_layout.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <vector>

#include "models/gpu_catalog.h"
#include "models/mig.h"
#include "models/vllm_version.h"
#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

// vLLM processes sharing a GPU each take gpu_memory_utilization of it (of their own instance's
// memory under MIG).
void check_gpu_share(const YAML::Node& n, const YamlWhere& w, std::int32_t pods_per_gpu,
                     GpuSharing sharing, const Params& server) {
  if (sharing == GpuSharing::kMig) return;
  const double util = gpu_memory_utilization_of(server);
  if (pods_per_gpu * util > 1.0 + 1e-9) {
    throw ScenarioError(fmt::format(
        "{}: {} pods per GPU x {:g} exceeds the GPU; expected at most {:.4g} (1 / pods_per_gpu)",
        w.child("server").child("gpu_memory_utilization").at(n), pods_per_gpu, util,
        1.0 / pods_per_gpu));
  }
}

void check_vllm_version(const YAML::Node& n, const YamlWhere& w, const Params& server) {
  const YAML::Node s = n.IsMap() ? n["server"] : YAML::Node();
  const YAML::Node v = s.IsDefined() && s.IsMap() ? s["vllm_version"] : YAML::Node();
  parse_vllm_version(server.get_string("vllm_version"),
                     w.child("server").child("vllm_version").at(v.IsDefined() ? v : n));
}

// The keys that say how pods sit on GPUs, fleet-wide or a pool's own (over the fleet's).
ParamSpec gpu_layout_spec(std::int64_t pods_per_gpu, const std::string& sharing,
                          std::int64_t mps_percentage) {
  return ParamSpec()
      .integer("pods_per_gpu", pods_per_gpu, "model servers sharing one GPU", 1, 64)
      .text("gpu_sharing", sharing,
            "how co-located pods share their GPU: time_slicing (separate contexts take turns, a "
            "device plug-in's default), mps (NVIDIA MPS: their kernels run at once, a "
            "compute-bound step beside a memory-bound one) or mig (each pod on a MIG instance, a "
            "fixed slice of the SMs and the memory)",
            gpu_sharing_names())
      .integer("mps_active_thread_percentage", mps_percentage,
               "under mps, the percentage of the SMs each pod may use "
               "(CUDA_MPS_ACTIVE_THREAD_PERCENTAGE); 0: 100 / pods_per_gpu, as NVIDIA's device "
               "plug-in sets it",
               0, 100);
}

GpuSharing sharing_of(const Params& layout) {
  const auto& names = gpu_sharing_names();
  return static_cast<GpuSharing>(
      std::find(names.begin(), names.end(), layout.get_string("gpu_sharing")) - names.begin());
}

void check_sm_cap(const YAML::Node& n, const YamlWhere& w, GpuSharing sharing,
                  std::int32_t mps_percentage) {
  if (sharing == GpuSharing::kMps || mps_percentage == 0) return;
  const YAML::Node v = n.IsMap() ? n["mps_active_thread_percentage"] : YAML::Node();
  throw ScenarioError(w.child("mps_active_thread_percentage").at(v.IsDefined() ? v : n) +
                      ": applies only under gpu_sharing: mps; expected gpu_sharing: mps, or "
                      "leave mps_active_thread_percentage out");
}

// MPS needs to know what bounds each step, which only the roofline works out; an SM cap means
// nothing without MPS; MIG needs a GPU that has it, room for the pods, and no tensor parallelism
// (instances do not talk peer to peer). `pool` is the pool (or the fleet's one pool) at `n`.
void check_gpu_sharing(const YAML::Node& n, const YamlWhere& w, const PoolSpec& pool,
                       const FleetSpec& f) {
  const auto at = [&](const char* key) {
    const YAML::Node v = n.IsMap() ? n[key] : YAML::Node();
    return w.child(key).at(v.IsDefined() ? v : n);
  };
  const std::string& sharing = gpu_sharing_names()[static_cast<size_t>(pool.gpu_sharing)];
  check_sm_cap(n, w, pool.gpu_sharing, pool.mps_active_thread_percentage);
  const std::string cost_type = pool.cost_model.get_string("type");
  if (pool.gpu_sharing == GpuSharing::kMps && cost_type != "roofline") {
    throw ScenarioError(at("gpu_sharing") +
                        ": mps needs cost_model.type roofline, which says how much of each "
                        "step is compute and how much memory traffic; the " +
                        cost_type + " cost model does not (use time_slicing, or the roofline)");
  }
  if (pool.gpu_sharing != GpuSharing::kMig) return;
  const GpuSpec& gpu = find_gpu(f.gpus, pool.gpu);
  if (gpu.mig_slices == 0) {
    std::vector<std::string> with_mig;
    for (const GpuSpec& g : f.gpus) {
      if (g.mig_slices > 0) with_mig.push_back(g.name);
    }
    for (const GpuSpec& g : gpu_catalog()) {
      if (g.mig_slices > 0) with_mig.push_back(g.name);
    }
    throw ScenarioError(at("gpu_sharing") + ": " + sharing + ": the " + gpu.name +
                        " has no MIG; GPUs with MIG: " + join(with_mig, ", ") +
                        " (a GPU of fleet.gpus says its mig_slices)");
  }
  if (pool.pods_per_gpu > mig_max_instances(gpu)) {
    throw ScenarioError(at("pods_per_gpu") + ": " + std::to_string(pool.pods_per_gpu) +
                        " MIG instances on one " + gpu.name + "; expected at most " +
                        std::to_string(mig_max_instances(gpu)));
  }
  if (pool.server.get_int("tensor_parallel_size") > 1) {
    throw ScenarioError(w.child("server").child("tensor_parallel_size").at(n) +
                        ": MIG instances do not talk peer to peer, so a pod cannot span several; "
                        "expected 1 under gpu_sharing: mig");
  }
}

const ParamSpec& fleet_layout_spec() {
  static const ParamSpec kSpec =
      gpu_layout_spec(1, "time_slicing", 0)
          .integer("gpus_per_node", 1, "GPUs per node (a node_loss fault's domain)", 1, 64);
  return kSpec;
}

}  // namespace fleetsim
