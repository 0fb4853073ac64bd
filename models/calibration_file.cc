#include "models/calibration.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/calibration_internal.h"
#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

namespace calibration_detail {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace calibration_detail

namespace {

using calibration_detail::fmt;

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string num(double v) { return fmt("%.6g", v); }

// The roofline was fitted with all-reduces through host memory, which the scenario must keep.
bool fitted_on_host_path(const CalibrationResult& r) {
  return r.form == "roofline" && r.target.allreduce_path == "host";
}

}  // namespace

std::string calibration_yaml(const CalibrationResult& r) {
  std::ostringstream os;
  os << "# Cost-model calibration written by `fleetsim calibrate` (see docs/calibration.md).\n"
     << "# A scenario uses it with\n"
     << "#   fleet:\n"
     << "#     cost_model:\n"
     << "#       calibration: <this file, relative to the scenario file>\n"
     << "# Fields set beside `calibration` in the scenario override the values below.\n"
     << "cost_model:\n"
     << "  type: " << r.form << "\n";
  for (const auto& p : r.params) os << "  " << p.name << ": " << num(p.value) << "\n";
  for (const auto& [name, value] : r.settings) os << "  " << name << ": " << num(value) << "\n";
  if (fitted_on_host_path(r)) os << "  allreduce_path: host\n";
  os << "fit:\n"
     << "  form: " << r.form << "\n";
  if (r.form == "roofline") os << "  cost_model_revision: " << kRooflineRevision << "\n";
  os << "  source: " << yaml_quote(r.source) << "\n"
     << "  layout: " << r.layout << "\n";
  if (r.has_target) {
    os << "  gpu: " << yaml_quote(r.target.gpu) << "\n"
       << "  model: " << yaml_quote(r.target.model) << "\n"
       << "  tensor_parallel_size: " << r.target.tp << "\n"
       << "  kv_cache_dtype_bytes: " << r.target.kv_dtype_bytes << "\n";
  }
  std::vector<std::string> fixed;
  for (const auto& p : r.params) {
    if (p.fixed) fixed.push_back(p.name);
  }
  os << "  fixed: [" << join(fixed, ", ") << "]\n";
  os << "  std_errors:\n";
  for (const auto& p : r.params) {
    if (!p.fixed) os << "    " << p.name << ": " << fmt("%.3g", p.std_error) << "\n";
  }
  if (r.form == "roofline") os << "  iterations: " << r.iterations << "\n";
  os << "  quality:\n";
  for (const auto& q : r.quality) {
    os << "    " << q.label << ": {rows: " << q.rows << ", r2: " << fmt("%.5f", q.r2)
       << ", rmse_ms: " << fmt("%.4g", q.rmse_ms)
       << ", mean_abs_error_pct: " << fmt("%.3g", q.mean_abs_error_pct)
       << ", max_abs_error_pct: " << fmt("%.3g", q.max_abs_error_pct) << "}\n";
  }
  if (!r.notes.empty()) {
    os << "  notes:\n";
    for (const auto& note : r.notes) os << "    - " << yaml_quote(note) << "\n";
  }
  return os.str();
}

std::string calibration_table(const CalibrationResult& r) {
  std::ostringstream os;
  os << "calibration: " << r.form << " form";
  if (r.has_target) {
    os << ", " << r.target.model << " on " << r.target.gpu << " x" << r.target.tp << " (KV "
       << r.target.kv_dtype_bytes << " B/element)";
  }
  os << "\n";
  if (!r.source.empty()) {
    os << "measurements: " << r.source << " (" << r.quality.front().rows << " "
       << (r.layout == "requests" ? "steps from per-request timings" : "steps") << ")\n";
  }
  os << "\n"
     << std::left << std::setw(28) << "parameter" << std::right << std::setw(14) << "value"
     << std::setw(14) << "std error"
     << "  unit\n";
  for (const auto& p : r.params) {
    os << std::left << std::setw(28) << p.name << std::right << std::setw(14)
       << fmt("%.6g", p.value) << std::setw(14) << (p.fixed ? "fixed" : fmt("%.3g", p.std_error))
       << "  " << p.unit << "\n";
  }
  os << "\n"
     << std::left << std::setw(16) << "rows" << std::right << std::setw(7) << "count"
     << std::setw(10) << "R^2" << std::setw(11) << "RMSE ms" << std::setw(14) << "mean |err| %"
     << std::setw(13) << "max |err| %"
     << "\n";
  for (const auto& q : r.quality) {
    os << std::left << std::setw(16) << q.label << std::right << std::setw(7) << q.rows
       << std::setw(10) << fmt("%.4f", q.r2) << std::setw(11) << fmt("%.3g", q.rmse_ms)
       << std::setw(14) << fmt("%.2f", q.mean_abs_error_pct) << std::setw(13)
       << fmt("%.2f", q.max_abs_error_pct) << "\n";
  }
  if (r.form == "roofline" && r.settled) {
    os << "\nregimes settled after " << r.iterations << (r.iterations == 1 ? " fit" : " fits")
       << "\n";
  }
  for (const auto& note : r.notes) os << "note: " << note << "\n";
  return os.str();
}

nlohmann::json calibration_json(const CalibrationResult& r) {
  nlohmann::json j;
  j["form"] = r.form;
  j["source"] = r.source;
  j["layout"] = r.layout;
  if (r.has_target) {
    j["target"] = {{"gpu", r.target.gpu},
                   {"model", r.target.model},
                   {"tensor_parallel_size", r.target.tp},
                   {"kv_cache_dtype_bytes", r.target.kv_dtype_bytes},
                   {"allreduce_bandwidth_gbs", r.target.allreduce_bandwidth_gbs},
                   {"allreduce_path", r.target.allreduce_path},
                   {"dequant_gemm_factor", r.target.dequant_gemm_factor},
                   {"moe_gemm_factor", r.target.moe_gemm_factor},
                   {"unoverlapped_fraction", r.target.unoverlapped_fraction},
                   {"kernel_floor_us", r.target.kernel_floor_us},
                   {"elementwise_efficiency", r.target.elementwise_efficiency},
                   {"moe_routing_us", r.target.moe_routing_us},
                   {"expert_parallel", r.target.expert_parallel}};
  }
  nlohmann::json cost_model = {{"type", r.form}};
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : r.params) {
    cost_model[p.name] = p.value;
    params[p.name] = {
        {"value", p.value}, {"std_error", p.std_error}, {"fixed", p.fixed}, {"unit", p.unit}};
  }
  for (const auto& [name, value] : r.settings) cost_model[name] = value;
  if (fitted_on_host_path(r)) cost_model["allreduce_path"] = "host";
  j["cost_model"] = cost_model;
  j["params"] = params;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& q : r.quality) {
    rows.push_back({{"label", q.label},
                    {"rows", q.rows},
                    {"r2", q.r2},
                    {"rmse_ms", q.rmse_ms},
                    {"mean_abs_error_pct", q.mean_abs_error_pct},
                    {"max_abs_error_pct", q.max_abs_error_pct}});
  }
  j["quality"] = rows;
  if (r.form == "roofline") {
    j["iterations"] = r.iterations;
    j["cost_model_revision"] = kRooflineRevision;
  }
  j["notes"] = r.notes;
  return j;
}

CalibrationFile read_calibration_file(const std::string& path) {
  return read_calibration_file(path, cost_model_spec().defaults());
}

CalibrationFile read_calibration_file(const std::string& path, const Params& base) {
  const YAML::Node root = load_yaml_file(path);  // file and line for bad YAML, duplicate keys
  const YamlWhere w{path, ""};
  if (!root.IsMap()) {
    throw ScenarioError(path +
                        ": expected a calibration file (a map with cost_model and fit), "
                        "as `fleetsim calibrate --out` writes");
  }
  check_keys(root, w, {"cost_model", "fit"});
  const YAML::Node cm = root["cost_model"];
  if (!cm.IsDefined() || cm.IsNull()) {
    throw ScenarioError(path +
                        ": missing field 'cost_model' (the map of fleet.cost_model "
                        "parameters `fleetsim calibrate` writes)");
  }
  if (cm.IsMap() && cm["calibration"].IsDefined()) {
    throw ScenarioError(w.child("cost_model").child("calibration").at(cm["calibration"]) +
                        ": a calibration file cannot reference another calibration file");
  }
  CalibrationFile f;
  f.path = path;
  f.cost_model = cost_model_spec().resolve(cm, w.child("cost_model"), base);
  if (const YAML::Node fit = root["fit"]; fit.IsDefined() && !fit.IsNull()) {
    if (!fit.IsMap()) throw ScenarioError(w.child("fit").at(fit) + ": expected a map");
    auto text = [&](const char* key) {
      const YAML::Node v = fit[key];
      if (!v.IsDefined() || v.IsNull()) return std::string();
      if (!v.IsScalar()) {
        throw ScenarioError(w.child("fit").child(key).at(v) + ": expected a name");
      }
      return v.Scalar();
    };
    f.form = text("form");
    f.gpu = text("gpu");
    f.model = text("model");
    auto positive = [&](const char* key) {
      const YAML::Node v = fit[key];
      if (!v.IsDefined() || v.IsNull()) return 0;
      int n = 0;
      if (!v.IsScalar() || !decode_decimal(v, n) || n < 1) {
        throw ScenarioError(w.child("fit").child(key).at(v) + ": expected an integer >= 1");
      }
      return n;
    };
    f.tp = positive("tensor_parallel_size");
    f.revision = positive("cost_model_revision");
    if (f.revision == 0 && f.form == "roofline") {
      // Written before the stamp: revision 2 wrote the element-wise efficiency it held.
      f.revision = cm.IsMap() && cm["elementwise_efficiency"].IsDefined() ? 2 : 1;
    }
  }
  return f;
}

}  // namespace fleetsim
