// The figures of one arm by name: one table that the result table, a scenario's `measured:`
// block and `fleetsim validate` all read, so a figure is defined once and every name that one
// of them accepts, the others accept too.
#pragma once

#include <string>
#include <vector>

#include "sim/fleet/runner.h"

namespace fleetsim {

enum class Better { kHigher, kLower, kNeither };

struct ArmMetric {
  const char* name;   // as written in `measured:` and in validation checks
  const char* label;  // row label of the result table
  int decimals;       // in the table
  const char* help;
  // NaN where the figure is undefined for the arm (a percentile of no requests, the previous
  // turn's pod where no conversation has two turns): n/a in the table, null in JSON.
  double (*value)(const ArmResult&);
  // false: defined only for some scenarios (per-turn figures; goodput needs an slo section),
  // so the table prints it apart or not at all.
  bool in_table = true;
  // Which way is better, for a campaign's reading of a difference (neither: a routing trait).
  Better better = Better::kHigher;
};

// In the result table's row order.
const std::vector<ArmMetric>& arm_metrics();
std::vector<std::string> arm_metric_names();
// Throws UnknownNameError listing every name when `name` is not one.
const ArmMetric& arm_metric(const std::string& name);

}  // namespace fleetsim
