#include "sim/fleet/sweep.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <exception>
#include <iomanip>
#include <set>
#include <sstream>

#include "sim/csv.h"
#include "sim/errors.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/report.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

// Each path once and each value once: a path given twice would leave every point with its last
// value (points that look different but are the same), and an override of a varied path would be
// replaced by the varied values without a word.
void check_axes(const std::string& path, bool own_grid, const std::vector<SweepAxis>& axes,
                const std::vector<std::string>& overrides) {
  auto origin = [&](const std::string& axis) {
    return own_grid ? path + ": sweep.vary." + axis : "--vary " + axis;
  };
  std::set<std::string> paths;
  for (const auto& [axis, values] : axes) {
    if (axis.empty()) {
      throw ScenarioError((own_grid ? path + ": sweep.vary" : std::string("--vary")) +
                          ": a varied path is empty; expected e.g. workload.concurrency");
    }
    if (!paths.insert(axis).second) {
      throw ScenarioError(origin(axis) + ": the path is varied twice; give all its values once" +
                          (own_grid ? "" : ", e.g. --vary " + axis + "=1,2,4"));
    }
    if (values.empty()) throw ScenarioError(origin(axis) + ": no values");
    std::set<std::string> seen;
    for (const auto& v : values) {
      if (!seen.insert(v).second) {
        throw ScenarioError(origin(axis) + ": the value '" + v + "' is given twice");
      }
    }
  }
  for (const auto& o : overrides) {
    const std::string set_path = o.substr(0, o.find('='));
    if (paths.count(set_path) != 0) {
      throw ScenarioError("--set " + o + ": " + set_path +
                          " is also varied by the sweep; set it or vary it, not both");
    }
  }
}

// " (written at file:line; ...)": where the scenario's own grid writes this point's values, so
// a value the scenario refuses can be found in the file.
std::string value_locations(const Scenario& base,
                            const std::vector<std::pair<std::string, std::string>>& point) {
  std::string text;
  for (size_t a = 0; a < base.sweep.size() && a < base.sweep_where.size(); ++a) {
    const auto& values = base.sweep[a].second;
    for (const auto& [k, v] : point) {
      if (k != base.sweep[a].first) continue;
      const auto it = std::find(values.begin(), values.end(), v);
      if (it == values.end()) continue;
      const std::string& at = base.sweep_where[a][static_cast<size_t>(it - values.begin())];
      text += (text.empty() ? "" : "; ") + at.substr(0, at.find(": "));
    }
  }
  return text.empty() ? text : " (written at " + text + ")";
}

}  // namespace

std::string point_text(const SweepPoint& point) {
  std::string text;
  for (const auto& [k, v] : point.vary) text += (text.empty() ? "" : " ") + k + "=" + v;
  return text;
}

SweepAxis parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw ScenarioError("--vary " + text +
                        ": expected PATH=V1,V2,... (e.g. workload.concurrency=1,4,16)");
  }
  SweepAxis axis{text.substr(0, eq), {}};
  const std::string values = text.substr(eq + 1);
  if (values.front() == '[') {
    const YAML::Node list = parse_yaml(values, "--vary " + axis.first);
    if (!list.IsSequence()) {
      throw ScenarioError("--vary " + text + ": expected a YAML list of values, e.g. [1, 4, 16]");
    }
    for (const auto& v : list) {
      axis.second.emplace_back(flow_text(v));
    }
  } else {
    std::stringstream ss(values);
    for (std::string v; std::getline(ss, v, ',');) axis.second.push_back(v);
    // getline drops what follows a last comma, so a comma at the end is an empty value too.
    if (values.back() == ',' ||
        std::find(axis.second.begin(), axis.second.end(), "") != axis.second.end()) {
      throw ScenarioError("--vary " + text +
                          ": an empty value (two commas, or a comma at an end); expected "
                          "PATH=V1,V2,...");
    }
  }
  if (axis.second.empty()) throw ScenarioError("--vary " + text + ": no values");
  return axis;
}

SweepResult run_sweep(const std::string& path, const std::vector<std::string>& overrides,
                      std::vector<SweepAxis> axes, int threads, bool keep_infeasible) {
  const Scenario base = load_scenario(path, overrides);
  const bool own_grid = axes.empty();
  if (own_grid) axes = base.sweep;
  if (axes.empty()) {
    throw ScenarioError(path + ": nothing to sweep; give --vary PATH=V1,V2 or a sweep: section");
  }
  check_axes(path, own_grid, axes, overrides);
  std::size_t points = 1;
  for (const auto& axis : axes) {
    points *= axis.second.size();
    if (points > kMaxSweepPoints) {
      throw ScenarioError(path + ": the grid has more than " + std::to_string(kMaxSweepPoints) +
                          " points; split it, or run it as Dask tasks (fleetsim.sweep with "
                          "client=, docs/scale-out.md)");
    }
  }
  SweepResult result;
  result.scenario = base.name;
  // The cartesian product, first axis outermost; each point is parsed with its overrides, so a
  // bad value fails before anything runs, naming its path.
  std::vector<std::vector<std::pair<std::string, std::string>>> grid = {{}};
  for (const auto& [axis_path, values] : axes) {
    std::vector<std::vector<std::pair<std::string, std::string>>> next;
    for (const auto& point : grid) {
      for (const auto& v : values) {
        auto p = point;
        p.emplace_back(axis_path, v);
        next.push_back(std::move(p));
      }
    }
    grid = std::move(next);
  }
  for (auto& point : grid) {
    std::vector<std::string> sets = overrides;
    for (const auto& [k, v] : point) sets.push_back(k + "=" + v);
    SweepPoint sp;
    sp.vary = point;
    try {
      sp.scenario = load_scenario(path, sets);
    } catch (const ScenarioError& e) {
      const std::string where = own_grid ? value_locations(base, point) : std::string();
      throw ScenarioError("sweep point " + point_text(sp) + where + ": " + e.what());
    }
    result.points.push_back(std::move(sp));
  }
  const std::vector<std::exception_ptr> errors =
      for_each_index(result.points.size(), threads, [&](size_t i) {
        SweepPoint& p = result.points[i];
        try {
          p.result = run_scenario(p.scenario, 1);
        } catch (const DeploymentError& e) {
          if (!keep_infeasible) throw;
          p.infeasible = e.reason();
        }
      });
  if (const size_t i = first_error(errors); i < errors.size()) {
    const std::string prefix = "sweep point " + point_text(result.points[i]) + ": ";
    try {
      std::rethrow_exception(errors[i]);
    } catch (const ScenarioError& e) {
      throw ScenarioError(prefix + e.what());
    } catch (const TraceError& e) {
      throw TraceError(prefix + e.what());
    }
  }
  return result;
}

nlohmann::json sweep_json(const SweepResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json vary = nlohmann::json::object();
    for (const auto& [k, v] : p.vary) vary[k] = v;
    if (!p.infeasible.empty()) {
      points.push_back({{"vary", vary}, {"does_not_start", p.infeasible}});
      continue;
    }
    points.push_back({{"vary", vary}, {"arms", result_json(p.result, p.scenario)["arms"]}});
  }
  return {{"scenario", r.scenario}, {"points", points}};
}

namespace {

// Whether any arm of any point has what `has` looks for.
template <typename Has>
bool any_arm(const SweepResult& r, Has has) {
  for (const auto& p : r.points) {
    for (const auto& a : p.result.arms) {
      if (has(a.summary)) return true;
    }
  }
  return false;
}

bool any_kv_offload(const SweepResult& r) {
  return any_arm(r, [](const ArmSummary& s) { return s.kv_offload.has_value(); });
}

bool any_autoscaling(const SweepResult& r) {
  return any_arm(r, [](const ArmSummary& s) { return s.autoscaling.has_value(); });
}

// The first point that ran (its arms name the columns), else the first point.
const SweepPoint& first_feasible(const SweepResult& r) {
  for (const auto& p : r.points) {
    if (p.infeasible.empty()) return p;
  }
  return r.points.front();
}

bool any_failed(const SweepResult& r) {
  return any_arm(r, [](const ArmSummary& s) { return s.failed > 0; });
}

}  // namespace

void write_sweep_table(std::ostream& os, const SweepResult& r) {
  if (r.points.empty()) return;
  std::vector<std::string> keys;
  for (const auto& [k, v] : r.points.front().vary) keys.push_back(k);
  // Each varied path's column is as wide as its longest value.
  std::vector<int> key_w;
  for (size_t i = 0; i < keys.size(); ++i) {
    size_t w = std::max<size_t>(keys[i].size(), 8);
    for (const auto& p : r.points) w = std::max(w, p.vary[i].second.size());
    key_w.push_back(static_cast<int>(w) + 2);
  }
  os << "sweep " << r.scenario << " (" << r.points.size()
     << (r.points.size() == 1 ? " point)\n" : " points)\n");
  os << std::left;
  for (size_t i = 0; i < keys.size(); ++i) os << std::setw(key_w[i]) << keys[i];
  // Scenarios with an slo section add each arm's SLO attainment; with KV offloading anywhere in
  // the grid, what the GPU and the host tier spared together; with failed requests anywhere,
  // how many (a rate over the completed ones alone would hide them).
  const SweepPoint& shown = first_feasible(r);
  const bool slo = has_goodput(shown.result);
  const bool host = any_kv_offload(r);
  const bool failed = any_failed(r);
  // Autoscaled arms: the GPU time each point costs (pod-hours).
  const bool scaled = any_autoscaling(r);
  const int cell_w = 46 + (slo ? 6 : 0) + (host ? 8 : 0) + (failed ? 8 : 0) + (scaled ? 8 : 0);
  for (const auto& a : shown.result.arms) {
    os << std::setw(cell_w)
       << (a.name + ": reuse%" + (host ? " +host%" : "") + " req/s TTFTp95ms TPOTp50ms" +
           (slo ? " SLO%" : "") + (failed ? " failed" : "") + (scaled ? " podh" : ""));
  }
  os << "\n";
  for (const auto& p : r.points) {
    for (size_t i = 0; i < keys.size(); ++i) {
      os << std::setw(key_w[i]) << p.vary[i].second;
    }
    if (!p.infeasible.empty()) os << "does not start: " << p.infeasible;
    for (const auto& a : p.result.arms) {
      std::ostringstream cell;
      cell << std::fixed << std::setprecision(1) << 100.0 * a.summary.prefix_cache_reuse << "  ";
      if (host) cell << 100.0 * combined_reuse(a.summary) << "  ";
      cell << std::setprecision(2) << a.summary.throughput_req_s << "  " << std::setprecision(0)
           << a.summary.ttft_ms.p95;
      cell << "  " << std::setprecision(1) << a.summary.tpot_ms.p50;
      if (a.summary.goodput) {
        cell << "  " << std::setprecision(1) << 100.0 * a.summary.goodput->attainment;
      }
      if (failed) cell << "  " << a.summary.failed;
      if (scaled && a.summary.autoscaling) {
        cell << "  " << std::setprecision(2) << a.summary.autoscaling->fleet.pod_seconds / 3600.0;
      }
      os << std::setw(cell_w) << cell.str();
    }
    os << "\n";
  }
}

void write_sweep_csv(std::ostream& os, const SweepResult& r) {
  if (r.points.empty()) return;
  for (const auto& [k, v] : r.points.front().vary) os << csv_field(k) << ",";
  const bool slo = has_goodput(first_feasible(r).result);
  const bool host = any_kv_offload(r);
  const bool infeasible = std::any_of(r.points.begin(), r.points.end(),
                                      [](const SweepPoint& p) { return !p.infeasible.empty(); });
  const bool scaled = any_autoscaling(r);
  os << "arm,policy,requests,completed,failed,prefix_cache_reuse,ttft_p50_ms,ttft_p95_ms,"
        "throughput_req_s,output_tokens_per_s"
     << (slo ? ",slo_attainment,goodput_req_s" : "") << (host ? ",combined_reuse" : "")
     << (scaled ? ",pod_hours" : "") << (infeasible ? ",does_not_start" : "") << "\n";
  for (const auto& p : r.points) {
    if (!p.infeasible.empty()) {
      // One row per arm, its figures empty, and the reason, quoted (it mostly holds commas).
      const int empty = 8 + (slo ? 2 : 0) + (host ? 1 : 0) + (scaled ? 1 : 0);
      for (const ArmSpec& a : p.scenario.arms) {
        for (const auto& [k, v] : p.vary) os << csv_field(v) << ",";
        os << csv_field(a.name) << "," << csv_field(a.policy)
           << std::string(static_cast<size_t>(empty), ',') << ","
           << csv_field(p.infeasible, /*always=*/true) << "\n";
      }
      continue;
    }
    for (const auto& a : p.result.arms) {
      for (const auto& [k, v] : p.vary) os << csv_field(v) << ",";
      const ArmSummary& s = a.summary;
      os << csv_field(a.name) << "," << csv_field(a.policy) << "," << s.requests << ","
         << s.completed << "," << s.failed << "," << s.prefix_cache_reuse << "," << s.ttft_ms.p50
         << "," << s.ttft_ms.p95 << "," << s.throughput_req_s << "," << s.output_tokens_per_s;
      if (s.goodput) os << "," << s.goodput->attainment << "," << s.goodput->goodput_req_s;
      if (host) os << "," << combined_reuse(s);
      if (scaled) {
        os << "," << (s.autoscaling ? s.autoscaling->fleet.pod_seconds / 3600.0 : 0.0);
      }
      if (infeasible) os << ",";
      os << "\n";
    }
  }
}

}  // namespace fleetsim
