// Capacity planning: the smallest fleet that meets the scenario's SLOs. For each arm, the pod
// count is searched by doubling from one pod until SLO attainment reaches the target, then by
// bisection between the last count that missed and the first that met it (docs/plan.md).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace fleetsim {

struct PlanOptions {
  std::vector<std::string> overrides;  // --set, for every run
  std::string path = "fleet.pods";     // the pod count searched (a pool's: fleet.pools.NAME.pods)
  double target_pct = 90;              // SLO attainment to reach, percent of requests
  int max_pods = 256;
  int seeds = 1;    // attainment at a count is the mean over this many seeds
  int threads = 0;  // arms searched in parallel; results do not depend on it
};

struct PlanPoint {
  int pods = 0;
  double attainment_pct = 0;  // mean over the seeds
  double goodput_req_s = 0;
  double throughput_req_s = 0;
  double ttft_p95_ms = 0;
  double tpot_p50_ms = 0;
  // The slo section's percentile targets (p95_ttft_ms ...) met at every seed; true without any.
  bool percentiles_met = true;
};

// Attainment that falls as pods are added: the search assumes it does not, so the count it
// found may not be the smallest, and more pods will not save the arm.
struct AttainmentFall {
  PlanPoint best;   // the highest attainment evaluated (fewest pods among equals)
  PlanPoint worst;  // the lowest attainment at more pods than `best`
};

struct ArmPlan {
  std::string arm;
  std::optional<int> pods_needed;       // none: not met up to max_pods
  std::vector<PlanPoint> evaluated;     // every count run, in pod order
  std::optional<AttainmentFall> falls;  // when attainment drops by more than 1 point
};

struct PlanResult {
  std::string scenario;
  std::string path;
  double target_pct = 0;
  int max_pods = 0;
  std::vector<std::uint64_t> seeds;
  std::vector<std::string> percentile_targets;  // "p95_ttft_ms <= 2000", also required
  std::vector<ArmPlan> arms;
};

// Throws ScenarioError for a scenario without an slo section, a path that is not a pod count, or
// bad options.
PlanResult run_plan(const std::string& scenario_path, const PlanOptions& options);

nlohmann::json plan_json(const PlanResult& r);

struct Scenario;
struct ArmResult;
// The seeds every point of a plan is judged over: the scenario's and the next seeds - 1.
std::vector<std::uint64_t> plan_seeds(std::uint64_t base, int seeds);
// Runs arm `arm` of `s` once per plan seed, handing each result to `each`.
void run_over_seeds(Scenario s, size_t arm, int seeds,
                    const std::function<void(const ArmResult&)>& each);
// Shared with the two-count search (pair_plan.h): the checks of the options against the scenario
// (`o.path` among them), and one point's figures, the mean over o.seeds runs of arm `arm` with
// `counts` ("PATH=N") set over o.overrides.
void check_plan_options(const Scenario& s, const PlanOptions& o, const std::string& path);
PlanPoint evaluate_plan_point(const std::string& path, const PlanOptions& o, size_t arm,
                              const std::vector<std::string>& counts);
void write_plan_report(std::ostream& os, const PlanResult& r);

}  // namespace fleetsim
