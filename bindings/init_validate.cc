// Area: fidelity. `fleetsim validate` from Python: every figure of the validation files against
// the simulation, as a dict (the CLI's JSON plus its table), with the GIL released meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <optional>
#include <sstream>
#include <vector>

#include "bindings/common.h"
#include "sim/fleet/validate.h"

namespace fleetsim::py_bindings {

namespace {

// The validation files: those given, or every validation/*.yaml under the working directory, as
// the CLI takes them.
std::vector<std::string> validation_files(
    const std::optional<std::vector<std::filesystem::path>>& files) {
  std::vector<std::string> out;
  if (files) {
    for (const auto& f : *files) out.push_back(f.string());
    if (out.empty()) throw py::value_error("files: an empty list; give validation files or None");
    return out;
  }
  out = default_validation_files();
  if (out.empty()) {
    throw py::value_error("no validation files given and none in ./validation (working directory " +
                          std::filesystem::current_path().string() + ")");
  }
  return out;
}

}  // namespace

void init_validate(py::module_& m) {
  m.def(
      "validate",
      [](const std::optional<std::vector<std::filesystem::path>>& files,
         const py::object& overrides, int seeds, int threads) {
        if (threads < 0) throw py::value_error("threads must be >= 0 (0 = all cores)");
        if (seeds < 1) throw py::value_error("seeds must be >= 1");
        const std::vector<std::string> paths = validation_files(files);
        const std::vector<std::string> sets =
            overrides.is_none() ? std::vector<std::string>{} : overrides_from(overrides);
        return run_as_report_dict([&] { return validate(paths, threads, seeds, sets); },
                                  validation_json, write_validation_table);
      },
      py::arg("files") = py::none(), py::arg("overrides") = py::none(), py::kw_only(),
      py::arg("seeds") = 1, py::arg("threads") = 0,
      "Every figure of the validation files against the simulation, as `fleetsim validate`\n"
      "compares them (docs/fidelity-notes.md).\n"
      "\n"
      "files: validation files (default: every validation/*.yaml under the working directory).\n"
      "overrides: {dotted.path: value} applied to every check's scenario after the check's own\n"
      "set:, as --set (what a constant, or your calibration, does to every record).\n"
      "seeds: judge the mean of this many seeds (the scenario's, then the next ones).\n"
      "\n"
      "Returns a dict: sources, all_ok, files and gpus (per validation file and per GPU the\n"
      "checks ran on: inside, figures, relative_figures, mean_abs_error_pct), figures (each:\n"
      "file, check, arm, metric, gpu, rule, measured, simulated, error, tolerance, relative, ok;\n"
      "with seeds > 1 also per_seed and seeds_inside), seeds and set when given, report (the\n"
      "CLI's table).\n"
      "Raises ScenarioError for a bad validation file, check or override.");
}

}  // namespace fleetsim::py_bindings
