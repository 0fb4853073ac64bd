// The Python module `fleetsim._core`. The pure-Python package `fleetsim` (python/fleetsim)
// re-exports it and adds sweeps and plots. Each area registers itself from its own file.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cstdint>

#include "bindings/common.h"

#ifndef FLEETSIM_VERSION
#define FLEETSIM_VERSION "0.0.0"
#endif

PYBIND11_MODULE(_core, m) {
  namespace fb = fleetsim::py_bindings;
  m.doc() =
      "fleetsim._core: the C++ simulator behind the `fleetsim` package (scenarios, runs, "
      "results, routing policies, catalogs). Import `fleetsim`, not this module.";
  m.attr("__version__") = FLEETSIM_VERSION;
  // pybind11 sets up its numpy API on first use, inside a function-local static. Two arm threads
  // of one run reaching it together deadlock: one holds the static's guard while numpy imports
  // and waits for the GIL, which the other holds while it waits on the guard. Set it up here,
  // once, at import.
  (void)pybind11::array_t<std::uint64_t>(0);
  // Errors first: every later area may raise them.
  fb::init_errors(m);
  fb::init_catalog(m);
  fb::init_scenario(m);
  fb::init_policies(m);
  fb::init_results(m);
  fb::init_calibration(m);
  fb::init_campaign(m);
  fb::init_plan(m);
  fb::init_validate(m);
  // Python's atexit hooks run before the interpreter stops serving other threads.
  pybind11::module_::import("atexit").attr("register")(
      pybind11::cpp_function([] { fb::stop_runs_at_exit(std::chrono::seconds(10)); }));
}
