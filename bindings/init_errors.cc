// Area: errors. The C++ hierarchy of sim/errors.h, one to one in Python:
//   fleetsim.Error(Exception)
//     ScenarioError (DeploymentError), TraceError, UnknownNameError, InternalError
// One translator tries the most derived classes first, so each C++ class arrives as its own
// Python class and anything else deriving from fleetsim::Error as fleetsim.Error; a C++
// filesystem error arrives as OSError. Nothing a user can cause aborts the interpreter.
#include <pybind11/pybind11.h>

#include <filesystem>

#include "bindings/common.h"
#include "sim/errors.h"

namespace fleetsim::py_bindings {
namespace {

// The translator is a plain function pointer, so the Python classes sit in globals.
py::exception<Error>* g_error = nullptr;
py::exception<ScenarioError>* g_scenario_error = nullptr;
py::exception<DeploymentError>* g_deployment_error = nullptr;
py::exception<TraceError>* g_trace_error = nullptr;
py::exception<UnknownNameError>* g_unknown_name = nullptr;
py::exception<InternalError>* g_internal_error = nullptr;

// Most derived first; anything else deriving from fleetsim::Error arrives as fleetsim.Error.
void translate(std::exception_ptr p) {  // NOLINT(performance-unnecessary-value-param)
  try {
    if (p) std::rethrow_exception(p);
  } catch (const DeploymentError& e) {
    (*g_deployment_error)(e.what());
  } catch (const ScenarioError& e) {
    (*g_scenario_error)(e.what());
  } catch (const TraceError& e) {
    (*g_trace_error)(e.what());
  } catch (const UnknownNameError& e) {
    (*g_unknown_name)(e.what());
  } catch (const InternalError& e) {
    (*g_internal_error)(e.what());
  } catch (const Error& e) {
    (*g_error)(e.what());
  } catch (const std::filesystem::filesystem_error& e) {
    // A file the user named could not be written or read (an --out directory, a path): the
    // OSError Python code expects from any file operation, with errno and the path.
    PyErr_SetObject(PyExc_OSError,
                    py::make_tuple(e.code().value(), e.code().message(), e.path1().string()).ptr());
  }
}

// The exception types live as long as the process: they are never destroyed, so no reference
// is dropped after the interpreter has finalized.
template <typename T>
py::exception<T>* make_exception(py::module_& m, const char* name, py::handle base,
                                 const char* doc) {
  auto* e = new py::exception<T>(m, name, base.ptr());
  e->attr("__doc__") = doc;
  e->attr("__module__") = "fleetsim";
  return e;
}

}  // namespace

void init_errors(py::module_& m) {
  g_error = make_exception<Error>(
      m, "Error", PyExc_Exception,
      "Base class of every error fleetsim raises: bad input (scenario, trace, name) or a broken "
      "invariant (InternalError).");
  g_scenario_error = make_exception<ScenarioError>(
      m, "ScenarioError", *g_error,
      "A scenario (file, YAML text, dict or override) that cannot be accepted. The message names "
      "the file, the line, the dotted field and what was expected.");
  g_deployment_error = make_exception<DeploymentError>(
      m, "DeploymentError", *g_scenario_error,
      "A deployment the scenario describes would not start: the model does not fit the GPU, or "
      "vLLM would refuse its max_model_len for the KV cache left. A ScenarioError too.");
  g_trace_error =
      make_exception<TraceError>(m, "TraceError", *g_error, "A trace file that cannot be read.");
  g_unknown_name = make_exception<UnknownNameError>(
      m, "UnknownNameError", *g_error,
      "A name (policy, GPU, model, workload, ...) that is not registered; the message lists the "
      "valid names.");
  g_internal_error = make_exception<InternalError>(
      m, "InternalError", *g_error,
      "A broken invariant inside the simulator: a bug, never the user's fault. Please report it.");
  py::register_exception_translator(&translate);
}

}  // namespace fleetsim::py_bindings
