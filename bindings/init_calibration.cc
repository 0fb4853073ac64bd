// Area: calibration. `fleetsim calibrate` from Python: fit the cost model to a CSV of step or
// request timings, get the constants and the fit quality as a dict, optionally write the
// calibration file a scenario references (fleet.cost_model.calibration).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "bindings/common.h"
#include "models/calibration.h"
#include "sim/errors.h"

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
        if (out) {
          if (out->has_parent_path()) std::filesystem::create_directories(out->parent_path());
          std::ofstream f(*out);
          f << yaml;
          f.flush();
          if (!f) {  // OSError in Python, with the reason and the path
            throw std::filesystem::filesystem_error(
                "cannot write the calibration file", *out,
                std::error_code(errno != 0 ? errno : EIO, std::generic_category()));
          }
        }
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
}

}  // namespace fleetsim::py_bindings
