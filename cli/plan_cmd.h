// `fleetsim plan`: the smallest fleet meeting the scenario's SLOs, per arm (docs/plan.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fleetsim::cli {

struct PlanCommand {
  CLI::App* app = nullptr;
  std::string scenario;
  std::string format = "table";
  std::vector<std::string> paths;  // none: fleet.pods; two: a pair of pools searched together
  std::vector<std::string> sets;
  double target = 90;
  int max_pods = 256;
  int seeds = 1;
  int threads = 0;
  double window_s = 0;  // > 0: a schedule, the fewest pods per window of this many seconds
};

void add_plan_command(CLI::App& app, PlanCommand& c);
int run_plan_command(const PlanCommand& c);

}  // namespace fleetsim::cli
