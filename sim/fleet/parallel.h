// The one thread pool of the simulator's drivers (arms of a run, points of a sweep, replicates
// of a campaign, arms of a plan): independent simulations, each writing only its own slot, so
// results never depend on how many threads ran them or in which order they finished.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <vector>

namespace fleetsim {

// Runs body(i) for every i in [0, n) on up to `threads` threads (<= 0: the hardware's count),
// the calling thread included. Returns what each index threw (null when it ran through), for the
// caller to name the failing index before rethrowing. Once one index throws, the simulations of
// the others stop with StoppedError (sim/stop.h).
std::vector<std::exception_ptr> for_each_index(std::size_t n, int threads,
                                               const std::function<void(std::size_t)>& body);

// The index of the error to report: the first that is not a StoppedError (the failure that
// stopped the others), else the first; errors.size() when none.
std::size_t first_error(const std::vector<std::exception_ptr>& errors);
// Rethrows that error, if any.
void rethrow_first(const std::vector<std::exception_ptr>& errors);

}  // namespace fleetsim
