// A schedule of pods over time (`fleetsim plan --window S`): for each window of S seconds of the
// workload, the fewest pods of a static fleet whose requests arriving in that window meet the SLO
// target; the counts become an autoscaling.schedule whose steps start early by the time a new
// pod takes to be Ready (sync period, provisioning, model load), run with the pods' lifecycle.
// Each window's count is then lowered, one pod at a time, while that saves GPU time and the run
// keeps every window that met the target meeting it (a static fleet judges a window with the
// backlog its own size left behind, which the schedule may not). Meant for open-loop workloads and
// traces, whose arrivals do not depend on the fleet (docs/plan.md).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/fleet/plan/plan.h"

namespace fleetsim {

struct PlanWindow {
  double start_s = 0, end_s = 0;
  std::int64_t requests = 0;  // measured requests arriving in it (over the seeds: a mean)
  // A static fleet's fewest pods for it (none: not met up to max_pods), and its attainment
  // there (at the most pods run when not met).
  std::optional<int> pods_needed;
  double attainment_pct = 0;
  // The schedule's pods for it (pods_needed, lowered where the schedule's run allows), and its
  // attainment in that run.
  int scheduled_pods = 0;
  double scheduled_attainment_pct = 0;
};

struct ScheduleCheck {
  double attainment_pct = 0;  // every measured request, in the schedule's run
  double pod_hours = 0;       // GPU time the schedule's pods held
  double peak_pods = 0;
  double static_pod_hours = 0;  // the peak count held for the whole run
};

struct ArmWindowPlan {
  std::string arm;
  std::vector<PlanWindow> windows;
  std::vector<int> evaluated;  // the static pod counts run
  std::string schedule;        // "time_s:pods, ..."; empty when some window is not met
  double lead_s = 0;
  std::optional<ScheduleCheck> check;
};

struct WindowPlanResult {
  std::string scenario;
  std::string path;  // the pod count scheduled: fleet.pods or fleet.pools.NAME.pods
  double target_pct = 0;
  int max_pods = 0;
  double window_s = 0;
  std::vector<std::uint64_t> seeds;
  std::vector<ArmWindowPlan> arms;
};

// Throws ScenarioError as run_plan does, and for a window that is not positive. With pools, it
// schedules the pool of options.path; the others keep what each arm gives them (their HPAs too).
WindowPlanResult run_window_plan(const std::string& scenario_path, const PlanOptions& options,
                                 double window_s);
nlohmann::json window_plan_json(const WindowPlanResult& r);
void write_window_plan_report(std::ostream& os, const WindowPlanResult& r);

}  // namespace fleetsim
