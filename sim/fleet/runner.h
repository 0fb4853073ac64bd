// Runs a scenario: each arm gets a fresh fleet, gateway and workload driven by one event loop.
// Arms are independent, so they may run on several threads with identical results.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "policies/policy.h"
#include "sim/fleet/metrics.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/timeline.h"

namespace fleetsim {

// What one pool's pods come to once the catalogs and vLLM's defaults are applied.
struct PoolFacts {
  std::string name;
  std::int32_t pods = 0;
  std::string gpu;
  std::string model;
  double weight_gib_per_gpu = 0;  // the weights one GPU holds as vLLM loads them
  std::int64_t kv_blocks_per_pod = 0;
  double kv_gib_per_pod = 0;
  std::int32_t max_num_batched_tokens = 0;
  std::int32_t max_num_seqs = 0;
  double host_kv_gib_per_pod = 0;  // KV offloading's host tier; 0 = none
  std::int64_t host_kv_blocks_per_pod = 0;
  // The KV block size vLLM's latent-attention kernels impose over server.block_size (0 = the
  // server's own).
  std::int32_t forced_block_size = 0;
  // Blocks a request's sliding-window layers hold at most, beside the chain the KV blocks count
  // (0 = no sliding-window layers).
  std::int32_t window_blocks_per_request = 0;
  std::string speculative_method;  // empty without speculative decoding
  std::int32_t num_speculative_tokens = 0;
  PodRole role = PodRole::kBoth;  // prefill/decode disaggregation
  std::int32_t tensor_parallel_size = 1;
  std::int32_t pipeline_parallel_size = 1;  // stages of tensor_parallel_size GPUs each
  // Tensor parallelism without GPU peer to peer: all-reduces through host memory
  // (cost_model.allreduce_path: host).
  bool allreduce_through_host = false;
  // More PCIe GPUs than vLLM's custom all-reduce takes: all-reduces through NCCL over PCIe.
  bool allreduce_through_nccl = false;
  // A mixture of experts spread whole over the pod's GPUs (server.enable_expert_parallel).
  bool expert_parallel = false;
};

struct FleetFacts {
  // The first pool's (every pod's, without fleet.pools).
  double weight_gib_per_gpu = 0;
  std::int64_t kv_blocks_per_pod = 0;
  double kv_gib_per_pod = 0;
  std::int32_t max_num_batched_tokens = 0;
  std::int32_t max_num_seqs = 0;
  std::vector<PoolFacts> pools;  // every pool, the implicit "default" one included
};

struct ArmResult {
  std::string name;
  std::string policy;
  ArmSummary summary;
  std::vector<RequestRecord> records;
  std::uint64_t events = 0;
  nlohmann::json failures;  // null unless the scenario has faults or health probes
  // Hazards the figures alone hide (FailureTracker::fail_fast_warnings, content_hazard), said
  // on stderr too.
  std::vector<std::string> warnings;
  // What the pods and requests did, when the scenario asks for it (Scenario::timeline).
  std::shared_ptr<const Timeline> timeline;
};

struct RunResult {
  std::string scenario;
  std::uint64_t seed = 0;
  FleetFacts fleet;
  std::vector<ArmResult> arms;
};

FleetFacts fleet_facts(const Scenario& s);
// The GPUs a pool's pods take: TP x PP of them (tensor- and pipeline-parallel sizes) for every
// `pods_per_gpu` co-located pods.
std::int64_t pool_gpus(const PoolFacts& p, std::int32_t pods_per_gpu);
// What a policy of `arm` is built with: the fleet's pods and pools, the seed, and its stream
// ("arm/<arm>/policy"; replica r > 0 of the gateway: "arm/<arm>/replica-<r>/policy").
PolicyContext policy_context(const Scenario& s, const std::string& arm, int replica = 0);
ArmResult run_arm(const Scenario& s, const ArmSpec& arm);
// threads <= 0: one thread per arm, up to the hardware's count.
RunResult run_scenario(const Scenario& s, int threads = 1);

}  // namespace fleetsim
