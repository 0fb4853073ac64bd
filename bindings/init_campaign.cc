// Area: campaigns. `fleetsim campaign` from Python: the five phases of a benchmark campaign of a
// scenario file and their verdict, as a dict (the CLI's JSON), with the GIL released meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>

#include "bindings/common.h"
#include "sim/fleet/campaign/campaign.h"

namespace fleetsim::py_bindings {

void init_campaign(py::module_& m) {
  m.def(
      "campaign",
      [](const std::filesystem::path& path, const py::object& overrides,
         std::optional<int> replicates, int threads) {
        if (replicates && *replicates < 2) {
          throw py::value_error("replicates must be at least 2 (a spread needs two)");
        }
        const std::string file = scenario_file_arg(path, "campaign");
        if (threads < 0) throw py::value_error("threads must be >= 0 (0 = all cores)");
        CampaignOptions o;
        if (!overrides.is_none()) o.overrides = overrides_from(overrides);
        o.replicates = replicates;
        o.threads = threads;
        return run_as_report_dict([&] { return run_campaign(file, o); }, campaign_json,
                                  write_campaign_report);
      },
      py::arg("path"), py::arg("overrides") = py::none(), py::kw_only(),
      py::arg("replicates") = py::none(), py::arg("threads") = 0,
      "Runs the benchmark campaign of a scenario file, as `fleetsim campaign` does "
      "(docs/campaign.md): health, one pod's capacity ramp (plateau and SLO knee), the routing\n"
      "mechanism's concentration, the A/B over `replicates` seeds (default: the scenario's\n"
      "campaign.replicates), BCa intervals, paired TOST equivalence against the baseline arm,\n"
      "and a verdict (PUBLISHABLE, ADD_REPLICATES, UNSTABLE or INVALID).\n"
      "\n"
      "overrides: {dotted.path: value} applied to every phase, as --set. threads: 0 = all\n"
      "cores; the result does not depend on it.\n"
      "\n"
      "Returns a dict: scenario, seeds, baseline, confidence, equivalence_margin_pct, health,\n"
      "calibrate, probe, arms (per arm: metrics {name: {values, mean, sd, cv_pct, ci}}),\n"
      "comparisons, gates, verdict (and suggested_replicates), report (the CLI's text).\n"
      "Raises ScenarioError for a bad scenario or campaign section.");
}

}  // namespace fleetsim::py_bindings
