// `fleetsim calibrate`: fits the cost model (models/cost_model.h) to a user's own timings, and
// reads back the calibration file a scenario references (fleet.cost_model.calibration).
//
//  - Measurements: a CSV file, one row per engine step (step_ms + the batch that ran, as
//    "NEW:CTX" entries) or one row per request timed alone (ttft_ms, prompt_tokens,
//    cached_tokens, tpot_ms, output_tokens), each turned into the step(s) it measured.
//  - Fitted form: weighted least squares of step_ms on [has_prefill, sum(l), sum(l^2),
//    has_decode, sum(ctx), decodes], i.e. the six FittedCoefficients at once.
//  - Roofline form: for the given GPU, model and tp, each step's compute and memory times at
//    efficiency 1 (RooflineCostModel::breakdown); rows go to the regime that dominates, then
//    step_ms - all-reduce = overhead + k_c compute + k_m memory, reassigned and refitted until
//    the regimes settle; efficiency = 1 / k.
// Rows are weighted by 1 / step_ms, so the fit minimizes relative errors: a 10 ms decode step
// counts as much as a 500 ms prefill. docs/calibration.md documents the format and the method.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "models/cost_model.h"
#include "sim/params.h"

namespace fleetsim {

// One measured engine step: the batch it ran and how long it took.
struct StepSample {
  std::vector<BatchEntry> batch;
  double step_ms = 0;
  std::int64_t line = 0;  // line of the measurements file (0 = not from a file)
  std::string origin;     // "step", "ttft" (a prefill timed alone) or "tpot" (a decode alone)
};

// A measurements file as read.
struct Measurements {
  std::string path;
  std::string layout;  // "steps" or "requests"
  std::vector<StepSample> steps;
  std::vector<std::string> ignored_columns;  // header columns the layout does not use
};

// Reads a measurements CSV. Any problem throws TraceError "file:line: column 'x': expected ...,
// got '...'" (or names the missing columns).
Measurements read_measurements(const std::string& path);
// Same, from text; `label` names it in errors.
Measurements parse_measurements(const std::string& text, const std::string& label);

// One `batch` cell: entries "NEW:CTX" (":CTX" optional, 0 by default), "COUNTxNEW:CTX" for
// COUNT equal entries, separated by ';' or spaces. Throws std::invalid_argument saying what is
// wrong (the reader adds file, line and column).
std::vector<BatchEntry> parse_batch(std::string_view text);

// What the roofline form is fitted for: the scenario's fleet.gpu, fleet.model and server
// settings the measurements were taken with.
struct RooflineTarget {
  std::string gpu;
  std::string model;
  std::int32_t tp = 1;
  std::int32_t kv_dtype_bytes = 2;
  double allreduce_bandwidth_gbs = 0;  // 0 = the GPU catalog's interconnect
  // Speed of GEMMs that dequantize their weights (FP8 weights on a GPU without FP8 tensor
  // cores) relative to BF16 GEMMs; held, not fitted: the compute efficiency is fitted under it.
  double dequant_gemm_factor = kDefaultDequantGemmFactor;
  // The roofline's shape, also held: the fraction of min(compute, memory) not overlapped and the
  // linear kernels' fixed time.
  double unoverlapped_fraction = kDefaultUnoverlappedFraction;
  double kernel_floor_us = kDefaultKernelFloorUs;
  // The element-wise kernels' share of peak bandwidth, held: their time is taken off each step
  // before the fit, which then fits the GEMMs alone.
  double elementwise_efficiency = kDefaultElementwiseEfficiency;
  // How the measured server's GPUs reach each other (the cost model's allreduce_path): "p2p" or
  // "host" (no GPU peer to peer: NCCL through host memory). Held with the path's latency.
  std::string allreduce_path = "p2p";
  // Speed of a mixture of experts' fused grouped GEMMs relative to dense GEMMs; held, as the
  // dequantizing factor is.
  double moe_gemm_factor = kDefaultMoeGemmFactor;
  // A mixture-of-experts layer's routing kernels' fixed time, us; held, as the kernel floor is.
  double moe_routing_us = kDefaultMoeRoutingUs;
  // The server spread a mixture of experts' experts whole over its tensor-parallel GPUs
  // (--enable-expert-parallel); a scenario says so in its server section.
  bool expert_parallel = false;
};

struct CalibrationOptions {
  std::string form = "fitted";  // "fitted" or "roofline"
  RooflineTarget target;        // roofline: required; fitted: recorded when given
  // Parameters held at a value instead of fitted (cost_model_spec names: for roofline
  // compute_efficiency, bandwidth_efficiency, step_overhead_ms; for fitted the six
  // coefficients). The way out when the data cannot identify one.
  std::map<std::string, double> fixed;
  std::int32_t max_iterations = 50;  // roofline: regime reassignments
};

// How well the calibrated model reproduces a set of rows.
struct FitQuality {
  std::string label;  // "all", "prefill only", "decode only", "mixed", "compute-bound", ...
  std::int64_t rows = 0;
  double r2 = 0;                  // 1 - SS_res / SS_tot on step_ms (0 rows or no spread: 0)
  double rmse_ms = 0;             // root mean squared error, ms
  double mean_abs_error_pct = 0;  // mean of |predicted - measured| / measured, %
  double max_abs_error_pct = 0;
};

struct CalibratedParam {
  std::string name;  // a cost_model_spec() parameter
  double value = 0;
  double std_error = 0;  // standard error from the least-squares covariance; 0 when fixed
  bool fixed = false;
  std::string unit;
};

struct CalibrationResult {
  std::string form;
  std::string source;  // the measurements file
  std::string layout;  // "steps" or "requests"
  RooflineTarget target;
  bool has_target = false;              // target.gpu / target.model were given
  std::vector<CalibratedParam> params;  // in cost_model_spec() order
  // Other cost_model values the fit assumed (roofline: a given all-reduce bandwidth, the
  // dequantizing-GEMM factor of a model that needs it); written to the file with the params.
  std::vector<std::pair<std::string, double>> settings;
  std::vector<FitQuality> quality;  // "all" first, then one per kind of row
  std::int32_t iterations = 0;      // roofline: fits until the regimes settled
  bool settled = true;              // roofline: false when max_iterations ran out
  std::vector<std::string> notes;   // caveats worth reading (e.g. a clamped overhead)

  double param(const std::string& name) const;  // value of `name`; InternalError if absent
};

// Fits the form `options.form` to `steps`. A coefficient the rows cannot identify throws Error
// naming it, why (no such rows; a column that is a combination of others) and the fix; an
// unknown form, GPU, model or fixed name throws UnknownNameError.
CalibrationResult calibrate(const std::vector<StepSample>& steps, const CalibrationOptions& options,
                            const std::string& source = "");

// The calibration file: a `cost_model:` map of cost_model_spec() values a scenario can
// reference, and a `fit:` map of provenance and quality. Deterministic (no date).
std::string calibration_yaml(const CalibrationResult& r);
// The human table `fleetsim calibrate` prints.
std::string calibration_table(const CalibrationResult& r);
// Everything in the result, for tools and Python.
nlohmann::json calibration_json(const CalibrationResult& r);

// A calibration file read back.
struct CalibrationFile {
  std::string path;
  Params cost_model;    // cost_model_spec() defaults overlaid with the file's values
  std::string form;     // fit.form ("" when absent)
  std::string gpu;      // fit.gpu ("" when absent)
  std::string model;    // fit.model ("" when absent)
  std::int32_t tp = 0;  // fit.tensor_parallel_size (0 when absent)
  // fit.cost_model_revision: the roofline revision it was fitted against (kRooflineRevision).
  // Roofline files written before the stamp (revision 3) get 2 when they hold an
  // elementwise_efficiency, else 1; 0 for other files.
  std::int32_t revision = 0;
};

// Reads a file written by calibration_yaml (or by hand): its cost_model values over `base`
// (cost_model_spec() defaults, or the fleet-level values a pool inherits). Problems throw
// ScenarioError naming the file, the line and the field.
CalibrationFile read_calibration_file(const std::string& path, const Params& base);
CalibrationFile read_calibration_file(const std::string& path);

}  // namespace fleetsim
