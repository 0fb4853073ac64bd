#include "cli/plan_cmd.h"

#include <iostream>

#include "cli/option_checks.h"
#include "sim/errors.h"
#include "sim/fleet/plan/pair_plan.h"
#include "sim/fleet/plan/plan.h"
#include "sim/fleet/plan/window_plan.h"

namespace fleetsim::cli {

void add_plan_command(CLI::App& app, PlanCommand& c) {
  c.app = app.add_subcommand(
      "plan", "find, per arm, the smallest pod count whose SLO attainment reaches a target");
  c.app->add_option("scenario", c.scenario, "scenario YAML file (with an slo section)")->required();
  c.app->add_option("--target", c.target, "SLO attainment to reach, percent of requests")
      ->check(number_in(0.001, 100.0));
  c.app->add_option("--max-pods", c.max_pods, "give up above this many pods")
      ->check(integer_in(1, 100000));
  c.app->add_option("--path", c.paths,
                    "the pod count to search (default fleet.pods; a pool's: "
                    "fleet.pools.NAME.pods); given twice, two pools' counts searched together "
                    "for the fewest GPUs (xPyD)");
  c.app->add_option("--seeds", c.seeds, "attainment at a count: the mean over this many seeds")
      ->check(integer_in(1, 1000));
  c.app
      ->add_option("--window", c.window_s,
                   "seconds: plan the fewest pods per window of the workload and write them as "
                   "an autoscaling.schedule, checked by a run (open-loop workloads and traces)")
      ->check(number_in(1e-3, 1e9));
  c.app->add_option("--set", c.sets, "override a field for every run: PATH=VALUE");
  c.app->add_option("--format", c.format, "output format")->check(CLI::IsMember({"table", "json"}));
  c.app->add_option("--threads", c.threads, "threads (0 = all cores); results do not depend on it")
      ->check(threads_check());
}

int run_plan_command(const PlanCommand& c) {
  PlanOptions o;
  o.overrides = c.sets;
  if (c.paths.size() > 2) {
    throw ScenarioError("--path: at most two pod counts (a pair of pools), got " +
                        std::to_string(c.paths.size()));
  }
  o.path = c.paths.empty() ? "fleet.pods" : c.paths.front();
  o.target_pct = c.target;
  o.max_pods = c.max_pods;
  o.seeds = c.seeds;
  o.threads = c.threads;
  if (c.window_s > 0) {
    if (c.paths.size() == 2) {
      throw ScenarioError(
          "--window: one pod count (fleet.pods, or one pool's fleet.pools.NAME.pods), not two");
    }
    const WindowPlanResult r = run_window_plan(c.scenario, o, c.window_s);
    if (c.format == "json") {
      std::cout << window_plan_json(r).dump(2) << "\n";
    } else {
      write_window_plan_report(std::cout, r);
    }
    return 0;
  }
  if (c.paths.size() == 2) {
    const PairPlanResult r = run_pair_plan(c.scenario, o, {c.paths[0], c.paths[1]});
    if (c.format == "json") {
      std::cout << pair_plan_json(r).dump(2) << "\n";
    } else {
      write_pair_plan_report(std::cout, r);
    }
    return 0;
  }
  const PlanResult r = run_plan(c.scenario, o);
  if (c.format == "json") {
    std::cout << plan_json(r).dump(2) << "\n";
  } else {
    write_plan_report(std::cout, r);
  }
  return 0;
}

}  // namespace fleetsim::cli
