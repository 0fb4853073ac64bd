// Conversions shared by the areas of the Python module.
#include "bindings/common.h"

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <sstream>
#include <variant>

#include "sim/distribution.h"
#include "sim/errors.h"

namespace fleetsim::py_bindings {

std::shared_ptr<ScenarioHandle> make_scenario(std::string yaml_text, std::string label,
                                              std::vector<std::string> overrides) {
  auto h = std::make_shared<ScenarioHandle>();
  h->scenario = parse_scenario(yaml_text, label, overrides);
  h->yaml_text = std::move(yaml_text);
  h->label = std::move(label);
  h->overrides = std::move(overrides);
  return h;
}

// JSON text of a Python value (dict, list, ...) holding numbers of any kind: numpy scalars and
// arrays become plain values, paths their text; anything else is a TypeError naming it.
std::string json_text(const py::handle& v) {
  const py::cpp_function plain([](const py::object& o) -> py::object {
    if (py::hasattr(o, "tolist")) return o.attr("tolist")();  // numpy scalars and arrays
    if (py::hasattr(o, "__fspath__")) return py::module_::import("os").attr("fspath")(o);
    throw py::type_error("expected YAML values (dict, list, str, number, bool or None), got " +
                         py::repr(o).cast<std::string>());
  });
  return py::module_::import("json")
      .attr("dumps")(v, py::arg("default") = plain)
      .cast<std::string>();
}

namespace {

std::string override_value(const py::handle& v) {
  if (v.is_none()) return "null";
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) {
    return py::repr(v).cast<std::string>();
  }
  if (py::isinstance<py::dict>(v) || py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
    // JSON is flow YAML, and --set parses a value that starts with { or [.
    return json_text(v);
  }
  // numpy scalars and the like: their str() is what a user would type.
  return py::str(v).cast<std::string>();
}

}  // namespace

std::vector<std::string> overrides_from(const py::handle& overrides) {
  std::vector<std::string> out;
  if (overrides.is_none()) return out;
  if (!py::isinstance<py::dict>(overrides)) {
    throw py::type_error("overrides must be a dict {dotted.path: value}, e.g. {'fleet.pods': 4}");
  }
  for (const auto& [k, v] : overrides.cast<py::dict>()) {
    if (!py::isinstance<py::str>(k)) {
      throw py::type_error("override keys must be dotted paths (str), got " +
                           py::repr(k).cast<std::string>());
    }
    out.push_back(k.cast<std::string>() + "=" + override_value(v));
  }
  return out;
}

py::object json_to_py(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(j.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(j.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(j.get<double>());
    case nlohmann::json::value_t::string:
      return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list l;
      for (const auto& x : j) l.append(json_to_py(x));
      return l;
    }
    case nlohmann::json::value_t::object: {
      py::dict d;
      for (const auto& [k, v] : j.items()) d[py::str(k)] = json_to_py(v);
      return d;
    }
    default:
      throw InternalError("JSON value of an unexpected type");
  }
}

namespace {

struct RunsInProgress {
  std::mutex mutex;
  std::condition_variable none_left;
  int count = 0;
  bool exiting = false;
};

RunsInProgress& runs_in_progress() {
  static RunsInProgress runs;
  return runs;
}

}  // namespace

RunInProgress::RunInProgress() {
  RunsInProgress& runs = runs_in_progress();
  const std::lock_guard lock(runs.mutex);
  if (runs.exiting) throw StoppedError();
  ++runs.count;
}

RunInProgress::~RunInProgress() {
  RunsInProgress& runs = runs_in_progress();
  const std::lock_guard lock(runs.mutex);
  if (--runs.count == 0) runs.none_left.notify_all();
}

void stop_runs_at_exit(std::chrono::milliseconds limit) {
  RunsInProgress& runs = runs_in_progress();
  {
    const std::lock_guard lock(runs.mutex);
    runs.exiting = true;
    if (runs.count == 0) return;
  }
  process_stop_flag().request();
  const py::gil_scoped_release release;  // the runs' threads need it to return
  std::unique_lock lock(runs.mutex);
  runs.none_left.wait_for(lock, limit, [&] { return runs.count == 0; });
}

void refuse_bare_new(py::handle cls, const char* made_by) {
  const std::string name = "fleetsim." + cls.attr("__name__").cast<std::string>();
  const std::string message = name + " objects cannot be created from Python; " + made_by;
  cls.attr("__new__") = py::staticmethod(py::cpp_function(
      [message](const py::args&, const py::kwargs&) -> py::object {
        throw py::type_error(message);
      },
      py::name("__new__")));
}

py::object param_value_to_py(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> py::object {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, DistributionPtr>) {
          return py::str(x ? x->describe() : std::string("none"));
        } else {
          return py::cast(x);
        }
      },
      v);
}

py::dict params_to_py(const Params& p) {
  py::dict d;
  for (const auto& [k, v] : p.values()) d[py::str(k)] = param_value_to_py(v);
  return d;
}

py::list spec_to_py(const ParamSpec& spec) {
  py::list out;
  for (const ParamDef& def : spec.defs()) {
    py::dict d;
    d["name"] = def.name;
    d["type"] = to_string(def.type);
    d["default"] = param_value_to_py(def.default_value);
    d["help"] = def.help;
    d["min"] = std::isinf(def.min) ? py::object(py::none()) : py::object(py::float_(def.min));
    d["max"] = std::isinf(def.max) ? py::object(py::none()) : py::object(py::float_(def.max));
    d["choices"] = py::cast(def.choices);
    out.append(std::move(d));
  }
  return out;
}

std::string scenario_file_arg(const std::filesystem::path& path, const char* function) {
  std::string s = path.string();
  if (s.find('\n') != std::string::npos) {
    throw py::value_error(std::string(function) +
                          "(): expected the path of a scenario file, got YAML text; write it to "
                          "a file (fleetsim.Scenario.yaml holds a loaded scenario's text)");
  }
  return s;
}

}  // namespace fleetsim::py_bindings
