// Shared pieces of the Python module `fleetsim._core`: the init function of each area and the
// conversions more than one area needs. One file per area (init_<area>.cc), as DESIGN.md asks.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // in every file of the module, so every file casts STL types alike

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bindings/python_calls.h"
#include "sim/fleet/scenario.h"
#include "sim/params.h"
#include "sim/stop.h"

namespace fleetsim::py_bindings {

namespace py = pybind11;

// A scenario as Python holds it: the validated C++ Scenario plus what it was parsed from, so a
// sweep can ship it to another process as YAML text and overrides and get the same scenario.
struct ScenarioHandle {
  Scenario scenario;
  std::string yaml_text;               // the YAML it was parsed from (a dict arrives as JSON)
  std::string label;                   // names it in errors: the file path, "<yaml>", "<dict>"
  std::vector<std::string> overrides;  // "dotted.path=value", applied before validation
};

// Parses `yaml_text` with `overrides` into a handle (throws ScenarioError).
std::shared_ptr<ScenarioHandle> make_scenario(std::string yaml_text, std::string label,
                                              std::vector<std::string> overrides);

// fleetsim.load(): a scenario from a path, YAML text, a dict or a Scenario, plus overrides.
std::shared_ptr<ScenarioHandle> load_any(const py::object& source, const py::object& overrides);

// {dotted.path: value} -> ["dotted.path=value", ...] with --set semantics: bools as true/false,
// numbers as Python writes them, dicts and lists as flow YAML (JSON), strings as they are.
std::vector<std::string> overrides_from(const py::handle& overrides);
// A dict (a scenario given as one) as JSON text, numpy values and paths included.
std::string json_text(const py::handle& v);
// `path` as the scenario file plan() and campaign() read; YAML text given in its place is a
// ValueError saying so (they read a file: the text's first lines would show as a file name).
std::string scenario_file_arg(const std::filesystem::path& path, const char* function);

// A JSON value as plain Python objects (dict, list, str, int, float, bool, None).
py::object json_to_py(const nlohmann::json& j);

// Makes `cls.__new__(cls)` a TypeError naming `made_by`, for a class whose objects only the
// module makes. pybind11 would return an object with no C++ value behind it, whose first method
// call reads unconstructed memory; the module's own casts do not go through __new__.
void refuse_bare_new(py::handle cls, const char* made_by);

// Counts the runs in progress, so that at interpreter exit (an atexit hook, module.cc) the runs
// of daemon threads can be stopped and waited for: a daemon thread that finds the interpreter
// finalized when it takes the GIL back is ended by pthread_exit, whose unwinding through a
// joinable std::thread aborts the process. Refuses a new run once exit has begun.
class RunInProgress {
 public:
  RunInProgress();
  ~RunInProgress();
  RunInProgress(const RunInProgress&) = delete;
  RunInProgress& operator=(const RunInProgress&) = delete;
};
// The atexit hook: stops every run in progress and waits (at most `limit`) for them to return.
void stop_runs_at_exit(std::chrono::milliseconds limit);

// Runs `f` (simulations) on a thread of its own, without the GIL, while this thread runs the
// simulations' Python calls (python_calls.h) and handles signals at least every 100 ms: on
// Ctrl-C the simulations stop at their next poll (sim/stop.h) and KeyboardInterrupt is raised
// here; a Python call that Ctrl-C interrupts raises it itself. f's own exception is rethrown.
template <class F>
auto run_interruptible(F f) -> decltype(f()) {
  using Result = decltype(f());
  const RunInProgress registered;  // with the GIL: released last, once back in Python's hands
  std::packaged_task<Result()> task(std::move(f));
  std::future<Result> done = task.get_future();
  // This run's own flag: a Ctrl-C stops the run of the thread that got it, not those of other
  // Python threads; the root flag (process_stop_flag) is for the exit hook.
  StopFlag this_run(&process_stop_flag());
  PythonCallQueue calls(this_run);
  std::thread worker([&task, &this_run, &calls] {
    const ScopedStopFlag installed(this_run);
    // A thread state for the whole run, for the Python objects (errors) the run drops here.
    const py::gil_scoped_acquire state;
    const py::gil_scoped_release unlocked;
    task();
    calls.finish();
  });
  std::optional<py::error_already_set> interrupt;
  calls.serve([&] {
    if (!interrupt && PyErr_CheckSignals() != 0) {
      interrupt.emplace();  // fetched: the calls still to serve run with no error pending
      this_run.request();
    }
  });
  {
    py::gil_scoped_release release;  // the worker takes the GIL to drop its thread state
    worker.join();
  }
  if (interrupt) throw *interrupt;
  return done.get();
}

// What fleetsim.campaign() and fleetsim.plan() return: `run()` runs without the GIL (Python
// routing policies take it back for their own calls, init_policies.cc), and its result comes
// back as the CLI's JSON (`to_json`) in a dict, with the CLI's text (`write_report`) under
// "report".
template <class Run, class ToJson, class WriteReport>
py::dict run_as_report_dict(Run run, ToJson to_json, WriteReport write_report) {
  const auto result = run_interruptible(std::move(run));
  py::dict d = json_to_py(to_json(result));
  std::ostringstream report;
  write_report(report, result);
  d["report"] = report.str();
  return d;
}

// A parameter value as a Python object (distributions as their description string).
py::object param_value_to_py(const ParamValue& v);
// All values of a Params as a dict.
py::dict params_to_py(const Params& p);
// A spec as a list of dicts {name, type, default, help, min, max, choices}.
py::list spec_to_py(const ParamSpec& spec);

// True when `name` is a routing policy registered from Python (init_policies.cc).
bool is_python_policy(const std::string& name);

// The areas, in the order module.cc calls them.
void init_errors(py::module_& m);
void init_catalog(py::module_& m);
void init_scenario(py::module_& m);
void init_policies(py::module_& m);
void init_results(py::module_& m);
void init_calibration(py::module_& m);
void init_campaign(py::module_& m);
void init_plan(py::module_& m);
void init_validate(py::module_& m);

}  // namespace fleetsim::py_bindings
