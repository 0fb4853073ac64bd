// Runs a scenario: each arm gets a fresh fleet, gateway and workload driven by one event loop.
// Arms are independent, so they may run on several threads with identical results.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/fleet/metrics.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {

struct FleetFacts {
  std::int64_t kv_blocks_per_pod = 0;
  double kv_gib_per_pod = 0;
  std::int32_t max_num_batched_tokens = 0;
  std::int32_t max_num_seqs = 0;
};

struct ArmResult {
  std::string name;
  std::string policy;
  ArmSummary summary;
  std::vector<RequestRecord> records;
  std::uint64_t events = 0;
  nlohmann::json failures;  // null unless the scenario has faults or health probes
};

struct RunResult {
  std::string scenario;
  std::uint64_t seed = 0;
  FleetFacts fleet;
  std::vector<ArmResult> arms;
};

FleetFacts fleet_facts(const Scenario& s);
ArmResult run_arm(const Scenario& s, const ArmSpec& arm);
// threads <= 0: one thread per arm, up to the hardware's count.
RunResult run_scenario(const Scenario& s, int threads = 1);

}  // namespace fleetsim
