// Area: calibration. `fleetsim calibrate` from Python: fit the cost model to a CSV of step or
// request timings, get the constants and the fit quality as a dict, optionally write the
// calibration file a scenario references (fleet.cost_model.calibration).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bindings/common.h"
#include "models/calibration.h"
#include "sim/errors.h"
#include "sim/fleet/figure_fit.h"
#include "sim/output_files.h"

namespace fleetsim::py_bindings {

void init_calibration(py::module_& m) {
  m.def(
      "calibrate",
      [](const std::filesystem::path& csv_path, const std::string& form,
         const std::optional<std::string>& gpu, const std::optional<std::string>& model, int tp,
         int kv_dtype_bytes, double allreduce_bandwidth_gbs, double dequant_gemm_factor,
         double unoverlapped_fraction, double kernel_floor_us, double elementwise_efficiency,
         const std::string& allreduce_path, double moe_gemm_factor, double moe_routing_us,
         bool expert_parallel, const std::map<std::string, double>& fix,
         const std::optional<std::filesystem::path>& out) {
        const Measurements measurements = read_measurements(csv_path.string());
        CalibrationOptions o;
        o.form = form;
        o.target = {gpu.value_or(""),      model.value_or(""),      tp,
                    kv_dtype_bytes,        allreduce_bandwidth_gbs, dequant_gemm_factor,
                    unoverlapped_fraction, kernel_floor_us,         elementwise_efficiency,
                    allreduce_path,        moe_gemm_factor,         moe_routing_us,
                    expert_parallel};
        o.fixed = fix;
        const CalibrationResult r = calibrate(measurements.steps, o, csv_path.string());
        const std::string yaml = calibration_yaml(r);
        if (out) write_output_file(*out, yaml);  // whole or not at all; OSError if not
        py::dict d = json_to_py(calibration_json(r));
        d["ignored_columns"] = measurements.ignored_columns;
        d["yaml"] = yaml;
        d["table"] = calibration_table(r);
        return d;
      },
      py::arg("csv_path"), py::arg("form"), py::kw_only(), py::arg("gpu") = py::none(),
      py::arg("model") = py::none(), py::arg("tp") = 1, py::arg("kv_dtype_bytes") = 2,
      py::arg("allreduce_bandwidth_gbs") = 0.0,
      py::arg("dequant_gemm_factor") = kDefaultDequantGemmFactor,
      py::arg("unoverlapped_fraction") = kDefaultUnoverlappedFraction,
      py::arg("kernel_floor_us") = kDefaultKernelFloorUs,
      py::arg("elementwise_efficiency") = kDefaultElementwiseEfficiency,
      py::arg("allreduce_path") = "p2p", py::arg("moe_gemm_factor") = kDefaultMoeGemmFactor,
      py::arg("moe_routing_us") = kDefaultMoeRoutingUs, py::arg("expert_parallel") = false,
      py::arg("fix") = std::map<std::string, double>{}, py::arg("out") = py::none(),
      "Fits the cost model to your own timings, as `fleetsim calibrate` does "
      "(docs/calibration.md).\n"
      "\n"
      "csv_path: one row per engine step (columns step_ms, batch) or per request timed alone\n"
      "(prompt_tokens, cached_tokens, ttft_ms, tpot_ms, output_tokens). form: 'roofline' (fits\n"
      "compute_efficiency, bandwidth_efficiency and step_overhead_ms for `gpu` and `model`,\n"
      "with `tp`, `kv_dtype_bytes`, `allreduce_path` ('p2p' or 'host': no GPU peer to peer),\n"
      "`allreduce_bandwidth_gbs`, `dequant_gemm_factor` and `moe_gemm_factor` as served, and\n"
      "the roofline's shape, `unoverlapped_fraction`, `kernel_floor_us`, `moe_routing_us` and\n"
      "`elementwise_efficiency`, held) or "
      "'fitted' (the six\n"
      "coefficients). fix: {name: value} holds parameters instead of fitting them. out: write\n"
      "the calibration file there.\n"
      "\n"
      "Returns a dict: form, source, layout, target, cost_model (the values a scenario's\n"
      "fleet.cost_model takes), params ({name: {value, std_error, fixed, unit}}), quality\n"
      "(list of {label, rows, r2, rmse_ms, mean_abs_error_pct, max_abs_error_pct}), notes,\n"
      "ignored_columns, yaml (the calibration file text) and table (what the CLI prints).\n"
      "Raises TraceError for an unreadable CSV, Error when the rows cannot identify a\n"
      "parameter, UnknownNameError for an unknown form, GPU, model or fixed name.");

  m.def(
      "calibrate_against",
      [](const std::vector<std::filesystem::path>& files, const std::vector<std::string>& fit,
         const py::object& overrides, int seeds, int threads, int max_evaluations,
         const std::optional<std::filesystem::path>& out) {
        if (files.empty()) throw py::value_error("files: give at least one file of figures");
        if (threads < 0) throw py::value_error("threads must be >= 0 (0 = all cores)");
        if (seeds < 1) throw py::value_error("seeds must be >= 1");
        FigureFitOptions o;
        for (const auto& f : files) o.files.push_back(f.string());
        o.fit = fit;
        if (!overrides.is_none()) o.sets = overrides_from(overrides);
        o.seeds = seeds;
        o.threads = threads;
        o.max_evaluations = max_evaluations;
        const FigureFitResult r = run_interruptible([&] { return fit_to_figures(o); });
        const std::string yaml = figure_fit_yaml(r);
        if (out) write_output_file(*out, yaml);  // whole or not at all; OSError if not
        py::dict d = json_to_py(figure_fit_json(r));
        d["yaml"] = yaml;
        d["report"] = figure_fit_table(r);
        return d;
      },
      py::arg("files"), py::kw_only(), py::arg("fit") = std::vector<std::string>{},
      py::arg("overrides") = py::none(), py::arg("seeds") = 1, py::arg("threads") = 0,
      py::arg("max_evaluations") = 100, py::arg("out") = py::none(),
      "Fits cost-model constants to measured figures by simulating them, as `fleetsim\n"
      "calibrate --against` does (docs/calibration.md, \"Fitting to measured figures\").\n"
      "\n"
      "files: files of measured figures in the validation format (scenario, set, figures with\n"
      "tolerances). fit: roofline constants of fleet.cost_model to fit (default\n"
      "compute_efficiency and bandwidth_efficiency). overrides: {dotted.path: value} on every\n"
      "check; a fitted constant's own path is where it starts. seeds: fit the mean of this many\n"
      "seeds. max_evaluations: simulations of every check the fit may run. out: write the\n"
      "calibration file there.\n"
      "\n"
      "Returns a dict: form, files, sets, gpu, params ({name: {start, value, std_error (None\n"
      "when the figures do not pin it), range, at_bound}}), cost_model (the values a scenario's\n"
      "fleet.cost_model takes), fitted_figures, evaluations, stop, rms_tolerances, before and\n"
      "after (each as fleetsim.validate returns it, without report), yaml (the calibration file\n"
      "text) and report (what the CLI prints).\n"
      "Raises UnknownNameError for a name that is not a fittable constant, Error for figures\n"
      "that cannot pin the constants, ScenarioError for a bad file, check or override.");
}

}  // namespace fleetsim::py_bindings
