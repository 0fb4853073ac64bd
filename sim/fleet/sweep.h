// Sweeps: every point of a grid of scenario overrides, run in parallel threads with results
// identical to a serial run (each point is its own simulation, writing its own slot).
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {

// One varied path and its values, as YAML scalars or flow values ("16", "{dist: ...}").
using SweepAxis = std::pair<std::string, std::vector<std::string>>;

// Parses "PATH=V1,V2,..." or "PATH=[V1, V2]" (a YAML flow list, for values with commas).
SweepAxis parse_vary(const std::string& text);

struct SweepPoint {
  std::vector<std::pair<std::string, std::string>> vary;  // path -> value of this point
  Scenario scenario;
  RunResult result;
  // Why the deployment of this point would not start (a DeploymentError); empty when it ran.
  std::string infeasible;
};

struct SweepResult {
  std::string scenario;
  std::vector<SweepPoint> points;
};

// "path=value path=value": how a point is named in labels and errors.
std::string point_text(const SweepPoint& point);

// Every point of a sweep is kept in memory with its results; a larger grid is refused with a
// pointer to the Dask route, which runs points as separate tasks.
inline constexpr std::size_t kMaxSweepPoints = 10'000;

// The grid is the cartesian product of `axes` (first axis outermost); when `axes` is empty the
// scenario's own `sweep:` section is used. `threads` <= 0: the hardware's count. A path varied
// twice, a value given twice for one path, or an override of a varied path is a ScenarioError
// (they would give points that differ in name only); so is a point the scenario rejects, named.
// `keep_infeasible`: a point whose deployment would not start (the model does not fit, vLLM
// refuses its max_model_len) is reported as such (SweepPoint::infeasible) instead of failing the
// sweep; readers that need every point's figures (validation, campaigns) leave it false.
SweepResult run_sweep(const std::string& path, const std::vector<std::string>& overrides,
                      std::vector<SweepAxis> axes, int threads, bool keep_infeasible = false);

nlohmann::json sweep_json(const SweepResult& r);
void write_sweep_table(std::ostream& os, const SweepResult& r);
void write_sweep_csv(std::ostream& os, const SweepResult& r);

}  // namespace fleetsim
