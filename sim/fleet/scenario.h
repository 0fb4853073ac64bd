// A scenario: the fleet, the workload, the gateway arms to compare, and the seed. Loaded from
// YAML with every field validated against its spec; --set overrides any field by dotted path.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/fleet/faults.h"
#include "sim/fleet/gpu_sharing.h"
#include "sim/fleet/pod_role.h"
#include "sim/fleet/slo.h"
#include "sim/fleet/timeline_options.h"
#include "sim/params.h"

namespace fleetsim {

// One HorizontalPodAutoscaler: the pool whose Deployment it scales (fleet_pools() index) and its
// settings, autoscaling_spec() resolved through the scenario's and the arm's layers.
struct HpaSpec {
  int pool = 0;
  std::string pool_name;
  Params params;
};

struct ArmSpec {
  std::string name;
  std::string policy;
  Params params;
  Params gateway;  // gateway_spec(): the scenario's gateway section with this arm's overrides
  // The HPAs this arm runs, one per scaled pool in pool order; empty = a fixed fleet.
  std::vector<HpaSpec> autoscaling;
  // "file:line: arms.N.params", for errors a policy raises only when it is built (an EPP's
  // filter names), which happens when the arm runs.
  std::string params_where;
};

// A group of identical pods (a model tier): its own GPU, model, server and cost model.
struct PoolSpec {
  std::string name;
  PodRole role = PodRole::kBoth;  // prefill/decode disaggregation (sim/fleet/pod_role.h)
  std::int32_t pods = 1;
  std::int32_t pods_per_gpu = 1;
  GpuSharing gpu_sharing = GpuSharing::kTimeSlicing;  // how co-located pods share their GPU
  // MPS: the percentage of SMs each pod may use; 0: 100 / pods_per_gpu, as NVIDIA's device
  // plug-in sets it.
  std::int32_t mps_active_thread_percentage = 0;
  std::string gpu;
  std::string model;
  Params server;      // server_spec(), over the fleet-level server section
  Params cost_model;  // cost_model_spec(), over the fleet-level cost_model section
  // "file:line: fleet.pools.N" (or "...: fleet" for the fleet's one pool): where an error of the
  // deployment it describes (the model does not fit, vLLM refuses a setting) points.
  std::string where;
};

struct FleetSpec {
  std::int32_t pods = 1;          // every pod of the fleet (the sum over pools)
  std::int32_t pods_per_gpu = 1;  // co-located model servers sharing one GPU
  GpuSharing gpu_sharing = GpuSharing::kTimeSlicing;
  std::int32_t mps_active_thread_percentage = 0;
  std::int32_t gpus_per_node = 1;
  // Without pools: the GPU and model of every pod. With pools: the fleet-level defaults, or
  // when not given the pools' values joined with '+'. The model is the name requests ask for.
  std::string gpu;
  std::string model;
  Params server;      // server_spec()
  Params cost_model;  // cost_model_spec()
  // fleet.pools; empty = one pool made of the fields above. Pods are numbered pool by pool, in
  // list order.
  std::vector<PoolSpec> pools;
  std::string where;  // "file:line: fleet"
  // fleet.gpus and fleet.models: the scenario's own definitions, found by name before the
  // catalog.
  std::vector<GpuSpec> gpus;
  std::vector<LlmSpec> models;
};

// The fleet's pools: fleet.pools, or one pool named "default" made of the fleet-level fields.
std::vector<PoolSpec> fleet_pools(const FleetSpec& fleet);
// Their names, in the same order.
std::vector<std::string> pool_names(const FleetSpec& fleet);

struct Scenario {
  std::string name;
  std::string description;
  std::string file;
  // "file:line" of each field of the workload section ("" for the section itself), for what the
  // workload refuses when built (located_workload_error).
  std::map<std::string, std::string> workload_places;
  std::uint64_t seed = 0;
  FleetSpec fleet;
  std::string workload_type;
  Params workload;
  std::vector<ArmSpec> arms;
  Params client;                  // client_spec(): retries
  std::vector<FaultSpec> faults;  // scheduled faults, the same for every arm
  double horizon_s = 0;           // 0 = run until the workload is done
  SloSpec slo;                    // the slo section: targets behind goodput@SLO
  Params campaign;                // campaign_spec(): `fleetsim campaign` settings
  // Measured figures to print beside the simulated ones: arm -> metric -> value.
  std::map<std::string, std::map<std::string, double>> measured;
  std::string measured_source;
  // The scenario's own grid (`sweep: {vary: {path: [values]}}`), for `fleetsim sweep`.
  std::vector<std::pair<std::string, std::vector<std::string>>> sweep;
  // Where each of those values is written ("file:line: sweep.vary.PATH[i]"), same shape.
  std::vector<std::vector<std::string>> sweep_where;
  // The timeline each arm records (`fleetsim run --timeline`); not a field of the file.
  TimelineOptions timeline;
};

// Loads a scenario file. `overrides` are "dotted.path=value" strings (--set).
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
// Parses YAML text; `label` names it in errors.
// A workload's refusal made when it is built ("workload.rate_schedule: ...", "workload: needs
// ..."), with the file and the line of the field it names (of the section when it names none);
// a message that names its place already is returned as it is.
std::string located_workload_error(const Scenario& s, const std::string& what);

Scenario parse_scenario(const std::string& yaml_text, const std::string& label,
                        const std::vector<std::string>& overrides = {});

// The client section: how a client retries a failed request.
const ParamSpec& client_spec();

// The fleet-level keys that place pods on GPUs and nodes (pods_per_gpu, gpu_sharing,
// mps_active_thread_percentage, gpus_per_node); a pool takes the first three over the fleet's.
const ParamSpec& fleet_layout_spec();

}  // namespace fleetsim
