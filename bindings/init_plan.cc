// Area: capacity planning. `fleetsim plan` from Python: per arm, the smallest pod count whose
// SLO attainment reaches a target, as a dict (the CLI's JSON), with the GIL released meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>

#include "bindings/common.h"
#include "sim/fleet/plan/pair_plan.h"
#include "sim/fleet/plan/plan.h"
#include "sim/fleet/plan/window_plan.h"

namespace fleetsim::py_bindings {

void init_plan(py::module_& m) {
  m.def(
      "plan",
      [](const std::filesystem::path& path, const py::object& overrides, double target,
         int max_pods, const py::object& pods_path, int seeds, int threads,
         const py::object& window_s) {
        const std::string file = scenario_file_arg(path, "plan");
        if (threads < 0) throw py::value_error("threads must be >= 0 (0 = all cores)");
        PlanOptions o;
        if (!overrides.is_none()) o.overrides = overrides_from(overrides);
        o.target_pct = target;
        o.max_pods = max_pods;
        o.seeds = seeds;
        o.threads = threads;
        const bool one_path = py::isinstance<py::str>(pods_path);
        if (!one_path && !py::isinstance<py::list>(pods_path) &&
            !py::isinstance<py::tuple>(pods_path)) {
          throw py::type_error(
              "pods_path: expected a path (str) or a list of two pools' paths, "
              "got " +
              py::repr(pods_path).cast<std::string>());
        }
        if (!window_s.is_none() &&
            (py::isinstance<py::bool_>(window_s) ||
             !(py::isinstance<py::int_>(window_s) || py::isinstance<py::float_>(window_s)))) {
          throw py::type_error("window_s: expected seconds (a number) or None, got " +
                               py::repr(window_s).cast<std::string>());
        }
        if (!window_s.is_none()) {
          if (!py::isinstance<py::str>(pods_path)) {
            throw py::value_error(
                "window_s plans one pod count (fleet.pods, or one pool's fleet.pools.NAME.pods), "
                "not two");
          }
          o.path = pods_path.cast<std::string>();
          const double w = window_s.cast<double>();
          return run_as_report_dict([&] { return run_window_plan(file, o, w); }, window_plan_json,
                                    write_window_plan_report);
        }
        if (!one_path) {
          std::vector<std::string> pair;
          for (const auto& item : pods_path) {
            if (!py::isinstance<py::str>(item)) {
              throw py::type_error("pods_path: expected two pools' paths (str), got " +
                                   py::repr(pods_path).cast<std::string>());
            }
            pair.push_back(item.cast<std::string>());
          }
          if (pair.size() != 2) {
            throw py::value_error("pods_path: a path, or a list of two pools' paths");
          }
          return run_as_report_dict(
              [&] {
                return run_pair_plan(file, o, {pair[0], pair[1]});
              },
              pair_plan_json, write_pair_plan_report);
        }
        o.path = pods_path.cast<std::string>();
        return run_as_report_dict([&] { return run_plan(file, o); }, plan_json, write_plan_report);
      },
      py::arg("path"), py::arg("overrides") = py::none(), py::kw_only(), py::arg("target") = 90.0,
      py::arg("max_pods") = 256, py::arg("pods_path") = py::str("fleet.pods"), py::arg("seeds") = 1,
      py::arg("threads") = 0, py::arg("window_s") = py::none(),
      "Per arm, the smallest pod count whose SLO attainment reaches `target` percent, as\n"
      "`fleetsim plan` finds it (docs/plan.md): doubling from one pod, then bisection.\n"
      "\n"
      "The scenario file needs an slo section. pods_path: fleet.pods, or a pool's\n"
      "fleet.pools.NAME.pods. seeds: attainment at a count is the mean over this many seeds.\n"
      "overrides: {dotted.path: value}, as --set.\n"
      "\n"
      "Returns a dict: scenario, path, target_pct, max_pods, seeds, arms (each: arm,\n"
      "pods_needed (None when not met up to max_pods), evaluated: [{pods, slo_attainment_pct,\n"
      "goodput_req_s, throughput_req_s, ttft_p95_ms, tpot_p50_ms}]), report (the CLI's text).\n"
      "\n"
      "pods_path as a list of two pools' paths (e.g. ['fleet.pools.prefill.pods',\n"
      "'fleet.pools.decode.pods']) searches both counts together, as `fleetsim plan --path A\n"
      "--path B`: the dict then has paths and, per arm, cheapest ({pods: [a, b], gpus} or\n"
      "None), frontier (the smallest b for each a that meets) and evaluated (each with pods\n"
      "[a, b], gpus and the figures above).\n"
      "\n"
      "window_s (seconds) plans a schedule of pods_path instead (fleet.pods, or one pool's\n"
      "pods, the other pools as each arm has them), as `fleetsim plan --window S`: per arm,\n"
      "windows [{start_s, end_s, requests, pods_needed, slo_attainment_pct,\n"
      "scheduled_slo_attainment_pct}], schedule (an autoscaling.schedule, or None), lead_s and\n"
      "check ({slo_attainment_pct, pod_hours, peak_pods, static_peak_pod_hours} of the run\n"
      "with the schedule).\n"
      "Raises ScenarioError for a scenario without an slo section or a bad pods_path.");
}

}  // namespace fleetsim::py_bindings
