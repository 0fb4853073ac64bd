// Area: scenario. Loading a scenario from a file, YAML text or a dict, with overrides by dotted
// path (the semantics of `fleetsim run --set`), and reading its validated fields.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <sstream>

#include "bindings/common.h"
#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim::py_bindings {
namespace {

using HandlePtr = std::shared_ptr<ScenarioHandle>;

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ScenarioError(path + ": is a directory; expected a scenario YAML file");
  }
  return read_input_file<ScenarioError>(path, "cannot open the scenario file");
}

// A str is a file path when such a file exists or when it does not look like YAML: one line,
// no ": " (a map's key) and no flow map; otherwise it is YAML text. ("runs/a:b.yaml" is a path.)
// Whether it exists is asked without opening it: opening a FIFO blocks.
bool looks_like_path(const std::string& s) {
  std::error_code ec;
  if (!s.empty() && std::filesystem::exists(s, ec)) return true;
  return s.find('\n') == std::string::npos && s.find(": ") == std::string::npos &&
         (s.empty() || s.front() != '{');
}

}  // namespace

HandlePtr load_any(const py::object& source, const py::object& overrides) {
  std::vector<std::string> sets = overrides_from(overrides);
  if (py::isinstance<ScenarioHandle>(source)) {
    const auto& h = source.cast<const ScenarioHandle&>();
    std::vector<std::string> all = h.overrides;
    all.insert(all.end(), sets.begin(), sets.end());
    return make_scenario(h.yaml_text, h.label, std::move(all));
  }
  if (py::isinstance<py::dict>(source)) {
    const std::string text = json_text(source);
    return make_scenario(text, "<dict>", std::move(sets));
  }
  const py::object pathlike = py::module_::import("os").attr("PathLike");
  if (py::isinstance(source, pathlike)) {
    const std::string path = py::str(py::module_::import("os").attr("fspath")(source));
    auto h = std::make_shared<ScenarioHandle>();
    h->scenario = load_scenario(path, sets);  // exactly what `fleetsim run PATH` does
    h->yaml_text = read_file(path);
    h->label = path;
    h->overrides = std::move(sets);
    return h;
  }
  if (py::isinstance<py::str>(source)) {
    const std::string s = source.cast<std::string>();
    if (s.find_first_not_of(" \t\r\n") == std::string::npos) {
      throw ScenarioError("an empty scenario: expected a file path, YAML text or a dict");
    }
    if (looks_like_path(s)) {
      return load_any(py::module_::import("pathlib").attr("Path")(s), overrides);
    }
    return make_scenario(s, "<yaml>", std::move(sets));
  }
  throw py::type_error(
      "a scenario is a file path (str or os.PathLike), YAML text, a dict, or a fleetsim.Scenario;"
      " got " +
      py::repr(py::type::of(source)).cast<std::string>());
}

namespace {

py::dict measured_to_py(const Scenario& s) {
  py::dict d;
  for (const auto& [arm, metrics] : s.measured) d[py::str(arm)] = py::cast(metrics);
  return d;
}

}  // namespace

void init_scenario(py::module_& m) {
  py::class_<ScenarioHandle, std::shared_ptr<ScenarioHandle>>(
      m, "Scenario",
      "A validated scenario: the fleet, the workload, the arms to compare and the seed. Make one "
      "with fleetsim.load(); it is immutable (with_overrides returns a new one). It keeps the "
      "YAML text and overrides it came from, so it can be sent to other processes.")
      .def_property_readonly(
          "name", [](const ScenarioHandle& h) { return h.scenario.name; }, "The scenario's name.")
      .def_property_readonly(
          "description", [](const ScenarioHandle& h) { return h.scenario.description; },
          "The scenario's free-text description.")
      .def_property_readonly(
          "label", [](const ScenarioHandle& h) { return h.label; },
          "What names the scenario in errors: its file path, '<yaml>' or '<dict>'.")
      .def_property_readonly(
          "seed", [](const ScenarioHandle& h) { return h.scenario.seed; },
          "The seed: the same scenario and seed give identical results.")
      .def_property_readonly(
          "pods", [](const ScenarioHandle& h) { return h.scenario.fleet.pods; },
          "Number of pods in the fleet (fleet.pods).")
      .def_property_readonly(
          "gpu", [](const ScenarioHandle& h) { return h.scenario.fleet.gpu; },
          "GPU of every pod (fleet.gpu); with fleet.pools, the pools' GPUs joined with '+' "
          "unless fleet.gpu is given.")
      .def_property_readonly(
          "model", [](const ScenarioHandle& h) { return h.scenario.fleet.model; },
          "Model every pod serves (fleet.model), the name requests ask for; with fleet.pools, "
          "the pools' models joined with '+' unless fleet.model is given.")
      .def_property_readonly(
          "pools",
          [](const ScenarioHandle& h) {
            py::list out;
            for (const PoolSpec& p : fleet_pools(h.scenario.fleet)) {
              py::dict d;
              d["name"] = p.name;
              d["pods"] = p.pods;
              d["pods_per_gpu"] = p.pods_per_gpu;
              d["gpu_sharing"] = gpu_sharing_names()[static_cast<size_t>(p.gpu_sharing)];
              d["mps_active_thread_percentage"] = p.mps_active_thread_percentage;
              d["gpu"] = p.gpu;
              d["model"] = p.model;
              d["server"] = params_to_py(p.server);
              d["cost_model"] = params_to_py(p.cost_model);
              out.append(std::move(d));
            }
            return out;
          },
          "The fleet's pools as a list of dicts (name, pods, pods_per_gpu, gpu_sharing, "
          "mps_active_thread_percentage, gpu, model, server, cost_model), every default filled "
          "in; one pool named 'default' without fleet.pools.")
      .def_property_readonly(
          "server", [](const ScenarioHandle& h) { return params_to_py(h.scenario.fleet.server); },
          "fleet.server with every default filled in, as a dict.")
      .def_property_readonly(
          "cost_model",
          [](const ScenarioHandle& h) { return params_to_py(h.scenario.fleet.cost_model); },
          "fleet.cost_model with every default filled in, as a dict.")
      .def_property_readonly(
          "workload_type", [](const ScenarioHandle& h) { return h.scenario.workload_type; },
          "The workload's type (workload.type).")
      .def_property_readonly(
          "workload", [](const ScenarioHandle& h) { return params_to_py(h.scenario.workload); },
          "The workload's parameters with defaults filled in, as a dict (distributions as their "
          "description).")
      .def_property_readonly(
          "arms",
          [](const ScenarioHandle& h) {
            py::list out;
            for (const ArmSpec& a : h.scenario.arms) {
              py::dict d;
              d["name"] = a.name;
              d["policy"] = a.policy;
              d["params"] = params_to_py(a.params);
              out.append(std::move(d));
            }
            return out;
          },
          "The arms as a list of dicts {name, policy, params} (params with defaults filled in).")
      .def_property_readonly(
          "horizon_s", [](const ScenarioHandle& h) { return h.scenario.horizon_s; },
          "sim.horizon_s: stop at this simulated time (0 = when the workload is done).")
      .def_property_readonly(
          "measured", [](const ScenarioHandle& h) { return measured_to_py(h.scenario); },
          "Measured figures to compare with: {arm: {metric: value}}.")
      .def_property_readonly(
          "measured_source", [](const ScenarioHandle& h) { return h.scenario.measured_source; },
          "Where the measured figures come from.")
      .def_property_readonly(
          "sweep",
          [](const ScenarioHandle& h) {
            py::dict d;
            for (const auto& [path, values] : h.scenario.sweep) d[py::str(path)] = py::cast(values);
            return d;
          },
          "The scenario's own grid (`sweep: {vary: {path: [values]}}`) as {path: [values as YAML "
          "text]}, first path outermost; fleetsim.sweep() uses it when given no grid.")
      .def_property_readonly(
          "yaml", [](const ScenarioHandle& h) { return h.yaml_text; },
          "The YAML text the scenario was parsed from, before overrides (a dict arrives as "
          "JSON text, which is YAML).")
      .def_property_readonly(
          "overrides", [](const ScenarioHandle& h) { return h.overrides; },
          "The overrides applied to the YAML, as 'dotted.path=value' strings, in order.")
      .def(
          "with_overrides",
          [](const ScenarioHandle& h, const py::object& overrides) {
            std::vector<std::string> all = h.overrides;
            for (auto& o : overrides_from(overrides)) all.push_back(std::move(o));
            return make_scenario(h.yaml_text, h.label, std::move(all));
          },
          py::arg("overrides"),
          "A new Scenario with more overrides {dotted.path: value} applied (same semantics as "
          "--set: list elements by index or by name, e.g. 'arms.epp.params.tie_break'). Raises "
          "ScenarioError when the result is not a valid scenario.")
      .def_static(
          "from_yaml",
          [](std::string yaml_text, std::string label, std::vector<std::string> overrides) {
            return make_scenario(std::move(yaml_text), std::move(label), std::move(overrides));
          },
          py::arg("yaml_text"), py::arg("label") = "<yaml>",
          py::arg("overrides") = std::vector<std::string>{},
          "Parses YAML text; `label` names it in errors (and is the name when the YAML has "
          "none); `overrides` are 'dotted.path=value' strings, as Scenario.overrides holds them. "
          "With a Scenario's yaml, label and overrides it rebuilds that scenario exactly.")
      // Pickled as a call of a Python function (pybind11's do not pickle), not through
      // __new__ and __setstate__, so that __new__ can refuse (refuse_bare_new).
      .def("__reduce__",
           [](const ScenarioHandle& h) {
             return py::make_tuple(py::module_::import("fleetsim").attr("_scenario_from_yaml"),
                                   py::make_tuple(h.yaml_text, h.label, h.overrides));
           })
      .def("__repr__", [](const ScenarioHandle& h) {
        std::ostringstream os;
        os << "<fleetsim.Scenario '" << h.scenario.name << "' seed " << h.scenario.seed << ": "
           << h.scenario.fleet.pods << " x " << h.scenario.fleet.gpu << ", "
           << h.scenario.fleet.model << ", " << h.scenario.arms.size() << " arms>";
        return os.str();
      });
  refuse_bare_new(m.attr("Scenario"), "use fleetsim.load().");

  m.def("load", &load_any, py::arg("source"), py::arg("overrides") = py::none(),
        "Loads and validates a scenario.\n\n"
        "source: a file path (str or os.PathLike), YAML text, a dict with the YAML's structure, "
        "or a Scenario (to add overrides).\n"
        "overrides: {dotted.path: value}, applied before validation with the semantics of "
        "`fleetsim run --set` (e.g. {'fleet.pods': 4, 'arms.epp.params.tie_break': 'random'}).\n"
        "Raises ScenarioError naming the file, line and field of what is wrong.");
}

}  // namespace fleetsim::py_bindings
