// A run's size, known before it starts from its workload's estimate of the requests it will
// send (Workload::expected_requests): a warning when the run is large, an error when its
// records could not fit in this machine's memory, and how far a running simulation has come.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "sim/fleet/scenario.h"
#include "sim/time.h"

namespace fleetsim {

// Requests an arm sends past which a run is worth a warning: minutes of CPU at the benchmark's
// 13k-17k requests per CPU second (docs/performance.md) and GiBs of per-request records.
constexpr double kLargeRunRequests = 1e7;

// The warning for a run of `expected` requests an arm, or nothing when it is not large.
// Throws ScenarioError when the records of every arm would need more than `memory_bytes`.
std::optional<std::string> run_size_warning(const Scenario& s, double expected,
                                            double memory_bytes);
// The same against this machine's physical memory; the warning goes to the log.
void check_run_size(const Scenario& s, std::optional<double> expected);

// How far a simulation has come, 0 to 1: simulated time against the horizon, or requests ended
// against the expected count, whichever is further.
double run_fraction(TimeNs now, double horizon_s, std::int64_t ended,
                    std::optional<double> expected);

}  // namespace fleetsim
