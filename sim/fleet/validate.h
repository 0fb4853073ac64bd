// `fleetsim validate`: runs the validation scenarios and compares each simulated figure with its
// measurement and tolerance. A validation file lists checks:
//
//   source: where the measurements come from            # optional
//   checks:
//     - scenario: scenarios/x.yaml          # or sweep: scenarios/y.yaml (then `point:` per figure)
//       set: [fleet.server.x=1]             # optional overrides, a list of PATH=VALUE
//       figures:                            # each: arm, metric, measured, and abs or rel
//         - {arm: epp, metric: prefix_cache_reuse_pct, measured: 93.3, abs: 3}
//         - {arm: epp, metric: warm_ttft_p50_ms, measured: 232, rel: 0.30}
//       shapes:                             # sweeps of one varied path only
//         - {arm: rr, metric: throughput_req_s, peak_at: 16}      # the highest point, measured
//         - {arm: epp, metric: throughput_req_s, rising_at_end: 3.8}  # last minus next-to-last
//
// Every file is read and checked (fields, metric names, shapes of lists and maps) before any
// scenario runs; errors are ScenarioErrors naming the file, line and field (checks.N.figures.M.x).
// An error of a scenario a check names keeps its own text, after the check's file:line: field.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace fleetsim {

struct FigureCheck {
  enum class Rule { kTolerance, kPeakAt, kRisingAtEnd };
  std::string file, label, arm, metric;
  // The GPU the check's scenario ran on (fleet.gpu; a fleet of pools joins theirs with '+').
  std::string gpu;
  double measured = 0, simulated = 0, error = 0, tolerance = 0;
  bool relative = false;
  // kPeakAt: measured and simulated are the varied value at the arm's highest point, and must
  // agree. kRisingAtEnd: they are the change from the next-to-last point to the last, and the
  // simulated change must be positive.
  Rule rule = Rule::kTolerance;
  bool ok = false;
  // With several seeds: `simulated` is the mean over them (for a shape, the shape of the mean
  // curve), these are the per-seed figures, and seeds_inside counts the seeds whose own figure
  // passes.
  std::vector<double> per_seed;
  int seeds_inside = 0;
};

struct ValidationReport {
  int seeds = 1;
  std::vector<std::string> sets;  // PATH=VALUE applied to every check, after its own set:
  std::vector<std::string> sources;
  std::vector<FigureCheck> figures;
  bool all_ok() const;
};

// Runs every check of every file, the checks side by side on `threads` threads (as in run/sweep:
// results do not depend on them; a lone check gives them to its arms or points), each
// with `seeds` seeds: the scenario's own, then the next ones. `sets` (PATH=VALUE) apply to every
// check's scenario after the check's own set:, to see what a constant does to every record.
ValidationReport validate(const std::vector<std::string>& files, int threads, int seeds = 1,
                          const std::vector<std::string>& sets = {});

// Reads and checks validation files as validate() does before any scenario runs (the scenario
// files they name are read only when run); returns how many checks they hold. A file with none
// is an error.
std::size_t read_validation_files(const std::vector<std::string>& files);

// Every *.yaml of `dir`, sorted: the files `fleetsim validate` and fleetsim.validate() check when
// given none. Empty when there are none, or no such directory.
std::vector<std::string> default_validation_files(const std::string& dir = "validation");

nlohmann::json validation_json(const ValidationReport& r);
void write_validation_table(std::ostream& os, const ValidationReport& r);
void write_validation_markdown(std::ostream& os, const ValidationReport& r,
                               const std::string& command);

}  // namespace fleetsim
