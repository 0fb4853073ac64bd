// The Python module `fleetsim._core`. The pure-Python package `fleetsim` (python/fleetsim)
// re-exports it and adds sweeps and plots. Each area registers itself from its own file.
#include <pybind11/pybind11.h>

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
  // Errors first: every later area may raise them.
  fb::init_errors(m);
  fb::init_catalog(m);
  fb::init_scenario(m);
  fb::init_policies(m);
  fb::init_results(m);
  fb::init_calibration(m);
  fb::init_campaign(m);
  fb::init_plan(m);
}
