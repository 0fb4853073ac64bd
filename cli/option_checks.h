// Validators for numeric flags whose refusals read like the scenario's own ("expected an integer
// in [0, 4096], got '-1'"), where CLI11's stock ones print 300-digit bounds or "Could not
// convert".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fleetsim::cli {

// A whole number in [min, max], written in decimal digits.
CLI::Validator integer_in(std::int64_t min, std::int64_t max);
// A finite number in [min, max].
CLI::Validator number_in(double min, double max);
// The threads of a command that runs arms or points in parallel: 0 (one per core) to 4096.
CLI::Validator threads_check();

// A window of simulated seconds, FROM:TO, each side optional (the run's start, its end), with
// 0 <= FROM < TO <= 1e9.
CLI::Validator window_check();
// The bounds of a window window_check() accepted, in seconds; an empty TO is +infinity.
std::pair<double, double> window_bounds(const std::string& text);

// The error for a field that several --set options (PATH=VALUE) set, or nothing: a field given
// twice is a slip, not an order of precedence.
std::optional<std::string> path_given_twice(const std::vector<std::string>& sets);

}  // namespace fleetsim::cli
