// Capacity planning over two pod counts at once: a prefill and a decode pool (xPyD), or any two
// pools. For each arm, the frontier of the smallest second count for each first count that meets
// the SLO target, and on it the pair that takes the fewest GPUs (docs/plan.md).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/fleet/plan/plan.h"

namespace fleetsim {

struct PairPoint {
  std::array<int, 2> pods = {0, 0};
  std::int64_t gpus = 0;
  PlanPoint figures;  // figures.pods unused
};

struct ArmPairPlan {
  std::string arm;
  std::optional<PairPoint> cheapest;  // none: not met up to max_pods in both counts
  std::vector<PairPoint> frontier;    // for each first count, the smallest second that meets
  std::vector<PairPoint> evaluated;   // every pair run, in (first, second) order
};

struct PairPlanResult {
  std::string scenario;
  std::array<std::string, 2> paths;
  double target_pct = 0;
  int max_pods = 0;
  std::vector<std::uint64_t> seeds;
  std::vector<ArmPairPlan> arms;
};

// `options.path` is ignored; `paths` are two different pools' fleet.pools.NAME.pods. Throws
// ScenarioError as run_plan does, and for paths that are not two pools' pod counts.
PairPlanResult run_pair_plan(const std::string& scenario_path, const PlanOptions& options,
                             const std::array<std::string, 2>& paths);

nlohmann::json pair_plan_json(const PairPlanResult& r);
void write_pair_plan_report(std::ostream& os, const PairPlanResult& r);

}  // namespace fleetsim
