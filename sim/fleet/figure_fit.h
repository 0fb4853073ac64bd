// `fleetsim calibrate --against FILE`: fits cost-model constants to measured figures by
// simulating them. A loaded benchmark's summary (throughput, mean TTFT, mean TPOT at some
// concurrency) is what most users have, not per-step timings; written as a validation file
// (sim/fleet/validate.h: scenario, set, figures with tolerances), each figure is a function of
// the constants that only the simulation can evaluate. Each evaluation runs every check of the
// files with `fleet.cost_model.NAME=V` set for the fitted names; Levenberg-Marquardt (Eigen's)
// minimizes the sum of squared errors, each in units of its figure's tolerance, over the
// logarithms of the constants (so they stay positive), with central differences for the
// Jacobian. Shapes (peak_at, rising_at_end) are reported before and after, not fitted.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "sim/fleet/validate.h"

namespace fleetsim {

struct FigureFitOptions {
  std::vector<std::string> files;  // validation files of the measurements
  // cost_model parameters of the roofline to fit; empty: compute_efficiency and
  // bandwidth_efficiency.
  std::vector<std::string> fit;
  // PATH=VALUE on every check, as `validate --set`. A fleet.cost_model.NAME=V of a fitted NAME
  // is where that parameter starts; other fleet.cost_model values are held and written to the
  // calibration file beside the fitted ones.
  std::vector<std::string> sets;
  int seeds = 1;
  int threads = 0;
  // Simulations of the whole set of checks the fit may run (the Jacobians' included).
  int max_evaluations = 100;
};

struct FigureFitParam {
  std::string name;
  double start = 0;
  double value = 0;
  double lo = 0, hi = 0;  // the parameter's range (a bound of 0 taken as 1e-6, none as 1e12)
  // Standard error from the Jacobian at the result, scaled by the residual variance; NaN when
  // the figures do not pin the parameter (it moves none of them, or only together with
  // another), 0 when the figures do not outnumber the parameters.
  double std_error = 0;
  bool at_bound = false;
};

struct FigureFitResult {
  std::vector<std::string> files;
  std::vector<std::string> sets;  // the caller's, less the fitted names' starts
  std::vector<FigureFitParam> params;
  ValidationReport before;  // with the caller's sets only: the constants as they were
  ValidationReport after;   // with the fitted values
  int evaluations = 0;
  int fitted_figures = 0;
  // Root mean square of the fitted figures' errors in units of their tolerances (1 = every
  // figure at its tolerance's edge), at the start values and at the result.
  double rms_before = 0, rms_after = 0;
  std::string stop_reason;
  std::string gpu;  // the one GPU of every figure, "" when several
};

// Throws Error for a name that is not a fittable constant (UnknownNameError, with the valid
// ones), a name given twice, a start of 0 or below, a set of fleet.cost_model.calibration or
// .type, and fewer figures with a tolerance to fit than constants; the checks' own errors as
// validate() does. All but the last before anything runs.
FigureFitResult fit_to_figures(const FigureFitOptions& o);

// The calibration file (read back by read_calibration_file): the fitted and held cost_model
// values and a fit: map of provenance. Deterministic.
std::string figure_fit_yaml(const FigureFitResult& r);
// What the CLI prints: the parameters, then every figure measured, before and after.
std::string figure_fit_table(const FigureFitResult& r);
nlohmann::json figure_fit_json(const FigureFitResult& r);

// The cost_model parameters fit_to_figures accepts: the roofline's real-valued constants.
std::vector<std::string> fittable_cost_model_params();

}  // namespace fleetsim
