#include "sim/fleet/validate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/report.h"
#include "sim/fleet/sweep.h"
#include "sim/input_files.h"
#include "sim/params.h"
#include "sim/stop.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(std::fabs(v) >= 100 ? 0 : 2) << v;
  return os.str();
}

// A figure or shape of a check, read and checked before anything runs so that a typo in the last
// check does not wait for the first ones to simulate.
struct Figure {
  YamlWhere where;  // checks.N.figures.M or checks.N.shapes.M
  YAML::Node node;
  Params params;
  const ArmMetric* metric = nullptr;
};

struct Check {
  YamlWhere target_where;  // checks.N.scenario or checks.N.sweep
  YAML::Node target_node;
  std::string path;  // the scenario file
  bool sweep = false;
  std::vector<std::string> sets;
  std::vector<Figure> figures;
  std::vector<Figure> shapes;
};

const ParamSpec& figure_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("arm", "", "arm name")
          .text("metric", "", "an arm metric's name (fleetsim list metrics)")
          .real("measured", 0, "the measured value")
          .real("abs", std::nan(""), "absolute tolerance (same unit as the metric)", 0)
          .real("rel", std::nan(""), "relative tolerance (fraction of the measured value)", 0);
  return kSpec;
}

const ParamSpec& shape_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("arm", "", "arm name")
          .text("metric", "", "an arm metric's name (fleetsim list metrics)")
          .real("peak_at", std::nan(""), "the varied value at which the measured curve peaks")
          .real("rising_at_end", std::nan(""),
                "the measured change from the next-to-last point to the last (> 0)");
  return kSpec;
}

std::vector<std::string> names_of(const ParamSpec& spec) {
  std::vector<std::string> names;
  for (const auto& d : spec.defs()) names.push_back(d.name);
  return names;
}

void require(const YAML::Node& node, const YamlWhere& where,
             const std::vector<std::string>& fields) {
  for (const auto& f : fields) {
    if (!node[f].IsDefined()) throw ScenarioError(where.at(node) + ": missing field '" + f + "'");
  }
}

// A list field that may be left out (or left empty); anything else but a list is an error, not
// something to skip.
std::vector<YAML::Node> list_of(const YAML::Node& node, const YamlWhere& where,
                                const std::string& expected) {
  std::vector<YAML::Node> items;
  if (!node.IsDefined() || node.IsNull()) return items;
  if (!node.IsSequence()) throw ScenarioError(where.at(node) + ": expected a list of " + expected);
  for (const auto& item : node) items.push_back(item);
  return items;
}

const ArmMetric& metric_named(const Figure& f) {
  const YAML::Node n = f.node["metric"];
  try {
    return arm_metric(f.params.get_string("metric"));
  } catch (const UnknownNameError& e) {
    throw ScenarioError(f.where.child("metric").at(n) + ": " + e.what());
  }
}

Figure read_figure(const YAML::Node& node, const YamlWhere& where, bool sweep) {
  std::vector<std::string> fields = names_of(figure_spec());
  if (sweep) fields.insert(fields.begin(), "point");
  if (!node.IsMap()) {
    throw ScenarioError(where.at(node) + ": expected a map {" + join(fields, ", ") + "}");
  }
  // Keys are checked on the node as written; `point` is not a parameter, so the spec resolves the
  // other fields, which stay the parsed nodes (with their lines) rather than a clone.
  check_keys(node, where, fields);
  YAML::Node values(YAML::NodeType::Map);
  for (const auto& kv : node) {
    if (kv.first.Scalar() != "point") values[kv.first] = kv.second;
  }
  Figure f{where, node, figure_spec().resolve(values, where)};
  require(node, where, {"arm", "metric", "measured"});
  if (sweep) {
    require(node, where, {"point"});
    if (!node["point"].IsMap()) {
      throw ScenarioError(where.child("point").at(node["point"]) +
                          ": expected a map varied path -> value, e.g. {workload.streams: 4}");
    }
  }
  const bool abs = node["abs"].IsDefined();
  const bool rel = node["rel"].IsDefined();
  if (abs == rel) {
    throw ScenarioError(where.at(node) + ": give one of abs or rel" + (abs ? ", not both" : ""));
  }
  if (rel && f.params.get_double("measured") == 0) {
    throw ScenarioError(where.child("rel").at(node["rel"]) +
                        ": a relative tolerance needs a measured value other than 0; give abs");
  }
  f.metric = &metric_named(f);
  return f;
}

Figure read_shape(const YAML::Node& node, const YamlWhere& where) {
  if (!node.IsMap()) {
    throw ScenarioError(where.at(node) + ": expected a map {" + join(names_of(shape_spec()), ", ") +
                        "}");
  }
  Figure f{where, node, shape_spec().resolve(node, where)};
  require(node, where, {"arm", "metric"});
  if (node["peak_at"].IsDefined() == node["rising_at_end"].IsDefined()) {
    throw ScenarioError(where.at(node) + ": give one of peak_at or rising_at_end");
  }
  f.metric = &metric_named(f);
  return f;
}

Check read_check(const YAML::Node& node, const YamlWhere& where) {
  check_keys(node, where, {"scenario", "sweep", "set", "figures", "shapes"});
  Check c;
  c.sweep = node["sweep"].IsDefined();
  if (c.sweep == node["scenario"].IsDefined()) {
    throw ScenarioError(where.at(node) + ": give one of scenario or sweep" +
                        (c.sweep ? ", not both" : " (the scenario file to run)"));
  }
  const std::string target = c.sweep ? "sweep" : "scenario";
  c.target_where = where.child(target);
  c.target_node = node[target];
  c.path = input_file_path(
      scalar_text(c.target_node, c.target_where, "the path of a scenario file"), c.target_where,
      c.target_node, "scenario file", "expected a scenario YAML file (docs/scenarios.md)");
  const YamlWhere sw = where.child("set");
  const std::vector<YAML::Node> sets =
      list_of(node["set"], sw, "overrides PATH=VALUE, e.g. [fleet.pods=2]");
  for (size_t i = 0; i < sets.size(); ++i) {
    const YamlWhere iw = sw.child(std::to_string(i));
    const std::string s = scalar_text(sets[i], iw, "an override PATH=VALUE, e.g. fleet.pods=2");
    if (s.find('=') == std::string::npos || s.front() == '=') {
      throw ScenarioError(iw.at(sets[i]) + ": expected PATH=VALUE, e.g. fleet.pods=2, got '" + s +
                          "'");
    }
    c.sets.push_back(s);
  }
  const YamlWhere fw = where.child("figures");
  const std::vector<YAML::Node> figures =
      list_of(node["figures"], fw, "figures {arm, metric, measured, abs or rel}");
  for (size_t i = 0; i < figures.size(); ++i) {
    c.figures.push_back(read_figure(figures[i], fw.child(std::to_string(i)), c.sweep));
  }
  if (node["shapes"].IsDefined() && !c.sweep) {
    throw ScenarioError(where.child("shapes").at(node["shapes"]) +
                        ": shapes need a sweep check (sweep: FILE), not a scenario");
  }
  const YamlWhere hw = where.child("shapes");
  const std::vector<YAML::Node> shapes =
      list_of(node["shapes"], hw, "shapes {arm, metric, peak_at or rising_at_end}");
  for (size_t i = 0; i < shapes.size(); ++i) {
    c.shapes.push_back(read_shape(shapes[i], hw.child(std::to_string(i))));
  }
  if (c.figures.empty() && c.shapes.empty()) {
    throw ScenarioError(where.at(node) + ": nothing to check; give figures" +
                        (c.sweep ? " or shapes" : ""));
  }
  return c;
}

// Loading and running a scenario the check names: its errors keep their own text (which names
// the scenario file), led by the place in the validation file that named it.
template <typename Body>
void referenced(const std::string& prefix, Body&& body) {
  try {
    body();
  } catch (const InternalError&) {
    throw;
  } catch (const StoppedError&) {
    throw;  // as it is, so the error that stopped it is the one reported
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.starts_with(prefix)) throw;
    if (dynamic_cast<const TraceError*>(&e)) throw TraceError(prefix + what);
    throw ScenarioError(prefix + what);
  }
}

const ArmResult& arm_of(const RunResult& r, const Figure& f) {
  const std::string& arm = f.params.get_string("arm");
  std::vector<std::string> names;
  for (const auto& a : r.arms) {
    if (a.name == arm) return a;
    names.push_back(a.name);
  }
  throw ScenarioError(f.where.child("arm").at(f.node["arm"]) + ": no arm '" + arm +
                      "' in scenario " + r.scenario + "; arms: " + join(names, ", "));
}

FigureCheck check(const Figure& f, const std::string& label, const RunResult& run) {
  FigureCheck c;
  const Params& p = f.params;
  c.file = f.where.file;
  c.label = label;
  c.arm = p.get_string("arm");
  c.metric = p.get_string("metric");
  c.measured = p.get_double("measured");
  c.simulated = f.metric->value(arm_of(run, f));
  c.relative = !std::isnan(p.get_double("rel"));
  c.tolerance = c.relative ? p.get_double("rel") : p.get_double("abs");
  c.error = c.relative ? (c.simulated - c.measured) / c.measured : c.simulated - c.measured;
  c.ok = std::fabs(c.error) <= c.tolerance + 1e-12;
  return c;
}

// A varied value as the sweep holds it: scalars as written, anything else as flow YAML.
std::string value_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  return flow_text(n);
}

// The sweep point a figure's `point:` names: a value for every varied path, and nothing else.
const SweepPoint& point_of(const Figure& f, const SweepResult& sweep) {
  const YAML::Node point = f.node["point"];
  const YamlWhere pw = f.where.child("point");
  std::vector<std::string> paths;
  for (const auto& [k, v] : sweep.points.front().vary) paths.push_back(k);
  check_keys(point, pw, paths);
  for (const auto& k : paths) {
    if (!point[k].IsDefined()) {
      throw ScenarioError(pw.at(point) + ": missing field '" + k +
                          "'; give a value for each varied path: " + join(paths, ", "));
    }
  }
  for (const auto& sp : sweep.points) {
    bool same = true;
    for (const auto& [k, v] : sp.vary) same = same && value_text(point[k]) == v;
    if (same) return sp;
  }
  std::vector<std::string> points;
  for (const auto& sp : sweep.points) points.push_back(point_text(sp));
  throw ScenarioError(pw.at(point) +
                      ": no sweep point has these values; points: " + join(points, ", "));
}

// One arm's curve along a sweep of a single varied path (numeric values).
struct Curve {
  std::string label;
  std::vector<double> x;
  std::vector<double> y;
};

Curve curve_of(const Figure& f, const SweepResult& sweep) {
  const std::string where = f.where.at(f.node);
  if (sweep.points.size() < 2 || sweep.points.front().vary.size() != 1) {
    throw ScenarioError(where + ": shapes need a sweep of one varied path with 2 or more points");
  }
  Curve c;
  const std::string& path = sweep.points.front().vary.front().first;
  c.label = sweep.scenario + " " + path + " (curve)";
  for (const auto& sp : sweep.points) {
    const std::string& value = sp.vary.front().second;
    try {
      c.x.push_back(std::stod(value));
    } catch (const std::exception&) {
      throw ScenarioError(where + ": " + path + " = '" + value +
                          "' is not a number; shapes need a numeric axis");
    }
    c.y.push_back(f.metric->value(arm_of(sp.result, f)));
  }
  return c;
}

// The shape a curve must have.
FigureCheck shape_check(const Figure& f, const Curve& curve) {
  const Params& p = f.params;
  FigureCheck c;
  c.file = f.where.file;
  c.arm = p.get_string("arm");
  c.metric = p.get_string("metric");
  c.label = curve.label;
  const auto& x = curve.x;
  const auto& y = curve.y;
  if (!std::isnan(p.get_double("peak_at"))) {
    c.rule = FigureCheck::Rule::kPeakAt;
    c.measured = p.get_double("peak_at");
    c.simulated = x[std::max_element(y.begin(), y.end()) - y.begin()];
    c.error = c.simulated - c.measured;
    c.ok = c.error == 0;
  } else {
    c.rule = FigureCheck::Rule::kRisingAtEnd;
    c.measured = p.get_double("rising_at_end");
    c.simulated = y.back() - y[y.size() - 2];
    c.error = c.simulated - c.measured;
    c.ok = c.simulated > 0;
  }
  return c;
}

// A tolerance check over several seeds: the mean is judged; every seed's own figure is kept.
FigureCheck over_seeds(const std::vector<FigureCheck>& runs) {
  FigureCheck c = runs.front();
  double sum = 0;
  c.per_seed.clear();
  c.seeds_inside = 0;
  for (const auto& r : runs) {
    c.per_seed.push_back(r.simulated);
    sum += r.simulated;
    c.seeds_inside += r.ok ? 1 : 0;
  }
  c.simulated = sum / static_cast<double>(runs.size());
  c.error = c.relative ? (c.simulated - c.measured) / c.measured : c.simulated - c.measured;
  c.ok = std::fabs(c.error) <= c.tolerance + 1e-12;
  return c;
}

// A shape over several seeds: judged on the mean curve, with each seed's own shape kept.
FigureCheck shape_over_seeds(const Figure& f, const std::vector<Curve>& curves) {
  Curve mean = curves.front();
  for (size_t i = 0; i < mean.y.size(); ++i) {
    double sum = 0;
    for (const auto& c : curves) sum += c.y[i];
    mean.y[i] = sum / static_cast<double>(curves.size());
  }
  FigureCheck c = shape_check(f, mean);
  for (const auto& curve : curves) {
    const FigureCheck one = shape_check(f, curve);
    c.per_seed.push_back(one.simulated);
    c.seeds_inside += one.ok ? 1 : 0;
  }
  return c;
}

// How a check's metric, error and tolerance read in the reports.
std::string metric_text(const FigureCheck& f) {
  switch (f.rule) {
    case FigureCheck::Rule::kPeakAt:
      return f.metric + " peak at";
    case FigureCheck::Rule::kRisingAtEnd:
      return f.metric + " last rise";
    case FigureCheck::Rule::kTolerance:
      break;
  }
  return f.metric;
}

std::string error_text(const FigureCheck& f) {
  return f.relative ? fmt(100 * f.error) + "%" : fmt(f.error);
}

std::string tolerance_text(const FigureCheck& f) {
  switch (f.rule) {
    case FigureCheck::Rule::kPeakAt:
      return "same";
    case FigureCheck::Rule::kRisingAtEnd:
      return "> 0";
    case FigureCheck::Rule::kTolerance:
      break;
  }
  return f.relative ? fmt(100 * f.tolerance) + "%" : fmt(f.tolerance);
}

std::string seeds_text(const FigureCheck& f, int seeds) {
  return std::to_string(f.seeds_inside) + "/" + std::to_string(seeds);
}

// Figures inside their tolerance per validation file (or per GPU), in the order they ran, and how
// far off its figures with a relative tolerance are on average: one number to follow from change
// to change, where the count moves only when a figure crosses its tolerance.
struct GroupCount {
  std::string name;  // the validation file, or the GPU
  int passed = 0, total = 0;
  int relative = 0;
  double abs_error_sum = 0;  // of the relative figures, as fractions
  double mean_abs_error_pct() const { return relative > 0 ? 100 * abs_error_sum / relative : 0; }
  void add(const FigureCheck& f) {
    passed += f.ok ? 1 : 0;
    ++total;
    if (f.rule == FigureCheck::Rule::kTolerance && f.relative) {
      ++relative;
      abs_error_sum += std::fabs(f.error);
    }
  }
};
std::vector<GroupCount> counts_by(const ValidationReport& r, const std::string FigureCheck::*key) {
  std::vector<GroupCount> out;
  for (const auto& f : r.figures) {
    const std::string& name = f.*key;
    auto it =
        std::find_if(out.begin(), out.end(), [&](const GroupCount& c) { return c.name == name; });
    if (it == out.end()) it = out.insert(out.end(), GroupCount{name});
    it->add(f);
  }
  return out;
}
std::vector<GroupCount> counts_per_file(const ValidationReport& r) {
  return counts_by(r, &FigureCheck::file);
}
// Per GPU, in the order of first appearance: where the pod model is trusted, and how far.
std::vector<GroupCount> counts_per_gpu(const ValidationReport& r) {
  return counts_by(r, &FigureCheck::gpu);
}
nlohmann::json counts_json(const std::vector<GroupCount>& counts, const char* key) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : counts) {
    out.push_back({{key, c.name},
                   {"inside", c.passed},
                   {"figures", c.total},
                   {"relative_figures", c.relative},
                   {"mean_abs_error_pct", std::round(c.mean_abs_error_pct() * 100) / 100}});
  }
  return out;
}
GroupCount count_all(const ValidationReport& r) {
  GroupCount all{"all"};
  for (const auto& f : r.figures) all.add(f);
  return all;
}
std::string mean_error_text(const GroupCount& c, const char* verb = "") {
  return c.relative > 0 ? "the " + std::to_string(c.relative) + " with a relative tolerance " +
                              verb + "off by " + fmt(c.mean_abs_error_pct()) + "% on average"
                        : std::string("none with a relative tolerance");
}

std::string range_text(const FigureCheck& f) {
  if (f.per_seed.empty()) return "";
  const auto [lo, hi] = std::minmax_element(f.per_seed.begin(), f.per_seed.end());
  return fmt(*lo) + " to " + fmt(*hi);
}

// Every check of every file, read and checked; the files' sources go to `sources`.
std::vector<Check> read_checks(const std::vector<std::string>& files,
                               std::vector<std::string>& sources) {
  std::vector<Check> checks;
  for (const auto& file : files) {
    const YAML::Node root = load_yaml_file(file);
    const YamlWhere w{file, ""};
    check_keys(root, w, {"source", "checks"});
    if (root["source"].IsDefined()) {
      sources.push_back(
          scalar_text(root["source"], w.child("source"), "a text naming the measurements"));
    }
    const YamlWhere cw = w.child("checks");
    if (!root["checks"].IsDefined()) throw ScenarioError(w.at(root) + ": missing field 'checks'");
    const std::vector<YAML::Node> nodes =
        list_of(root["checks"], cw, "checks {scenario or sweep, set, figures, shapes}");
    if (nodes.empty()) {
      throw ScenarioError(cw.at(root["checks"]) +
                          ": no checks; give at least one {scenario or sweep, figures}");
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      checks.push_back(read_check(nodes[i], cw.child(std::to_string(i))));
    }
  }
  return checks;
}

}  // namespace

bool ValidationReport::all_ok() const {
  for (const auto& f : figures) {
    if (!f.ok) return false;
  }
  return !figures.empty();
}

std::size_t read_validation_files(const std::vector<std::string>& files) {
  std::vector<std::string> sources;
  return read_checks(files, sources).size();
}

ValidationReport validate(const std::vector<std::string>& files, int threads, int seeds,
                          const std::vector<std::string>& sets) {
  if (seeds < 1) throw ScenarioError("--seeds: expected at least 1, got " + std::to_string(seeds));
  ValidationReport report;
  report.seeds = seeds;
  report.sets = sets;
  std::vector<Check> checks = read_checks(files, report.sources);
  // The checks' simulations run side by side, one check a thread (a lone check gives its
  // threads to its own arms or points); every figure is then read in the files' order.
  struct Runs {
    std::string prefix;     // the place in the validation file that named the scenario
    std::string overrides;  // the check's set:, in every label of its rows
    std::string label, gpu;
    std::vector<RunResult> runs;      // one per seed
    std::vector<SweepResult> sweeps;  // one per seed
  };
  std::vector<Runs> done(checks.size());
  for (size_t i = 0; i < checks.size(); ++i) {
    Check& c = checks[i];
    done[i].prefix = c.target_where.at(c.target_node) + ": ";
    // A sweep's own grid (sweep.*) is left out of the labels, as each row names its point.
    for (const auto& x : c.sets) {
      if (!(c.sweep && x.starts_with("sweep."))) done[i].overrides += " " + x;
    }
    // The caller's overrides come last, so they win over the check's; the report names them once.
    c.sets.insert(c.sets.end(), sets.begin(), sets.end());
  }
  const int inner = checks.size() > 1 ? 1 : threads;
  rethrow_first(for_each_index(checks.size(), threads, [&](size_t i) {
    const Check& c = checks[i];
    Runs& d = done[i];
    referenced(d.prefix, [&] {
      if (!c.sweep) {
        Scenario s = load_scenario(c.path, c.sets);
        d.label = s.name + d.overrides;
        d.gpu = s.fleet.gpu;
        const std::uint64_t base_seed = s.seed;
        for (int k = 0; k < seeds; ++k) {
          s.seed = base_seed + static_cast<std::uint64_t>(k);
          d.runs.push_back(run_scenario(s, inner));
        }
        return;
      }
      // The first sweep runs with the scenario's own seed (an override would clash with a grid
      // of seeds) and tells the next ones where to count from.
      d.sweeps.push_back(run_sweep(c.path, c.sets, {}, inner));
      const std::uint64_t base_seed = d.sweeps[0].points.front().scenario.seed;
      for (int k = 1; k < seeds; ++k) {
        std::vector<std::string> seeded = c.sets;
        seeded.push_back("seed=" + std::to_string(base_seed + static_cast<std::uint64_t>(k)));
        d.sweeps.push_back(run_sweep(c.path, seeded, {}, inner));
      }
    });
  }));
  for (size_t i = 0; i < checks.size(); ++i) {
    const Check& c = checks[i];
    Runs& d = done[i];
    if (!c.sweep) {
      for (const auto& f : c.figures) {
        std::vector<FigureCheck> per_seed;
        for (const auto& run : d.runs) per_seed.push_back(check(f, d.label, run));
        report.figures.push_back(over_seeds(per_seed));
        report.figures.back().gpu = d.gpu;
      }
      d = Runs();  // its records are read: give their memory back before the next check's
      continue;
    }
    for (const auto& f : c.figures) {
      std::vector<FigureCheck> per_seed;
      std::string label;
      std::string gpu;
      for (const auto& sweep : d.sweeps) {
        const SweepPoint& match = point_of(f, sweep);
        label = sweep.scenario + d.overrides + " " + point_text(match);
        gpu = match.scenario.fleet.gpu;
        per_seed.push_back(check(f, label, match.result));
      }
      report.figures.push_back(over_seeds(per_seed));
      report.figures.back().gpu = gpu;
    }
    for (const auto& f : c.shapes) {
      std::vector<Curve> curves;
      for (const auto& sweep : d.sweeps) curves.push_back(curve_of(f, sweep));
      report.figures.push_back(shape_over_seeds(f, curves));
      // A shape's one varied path is numeric, so every point ran on the same GPU.
      report.figures.back().gpu = d.sweeps[0].points.front().scenario.fleet.gpu;
    }
    d = Runs();
  }
  return report;
}

std::vector<std::string> default_validation_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json validation_json(const ValidationReport& r) {
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : r.figures) {
    figures.push_back({{"file", f.file},
                       {"check", f.label},
                       {"arm", f.arm},
                       {"metric", f.metric},
                       {"gpu", f.gpu},
                       {"rule", f.rule == FigureCheck::Rule::kPeakAt        ? "peak_at"
                                : f.rule == FigureCheck::Rule::kRisingAtEnd ? "rising_at_end"
                                                                            : "tolerance"},
                       {"measured", f.measured},
                       {"simulated", std::round(f.simulated * 1e4) / 1e4},
                       {"error", std::round(f.error * 1e4) / 1e4},
                       {"tolerance", f.tolerance},
                       {"relative", f.relative},
                       {"ok", f.ok}});
    if (r.seeds > 1) {
      figures.back()["per_seed"] = f.per_seed;
      figures.back()["seeds_inside"] = f.seeds_inside;
    }
  }
  nlohmann::json j = {{"sources", r.sources},
                      {"all_ok", r.all_ok()},
                      {"files", counts_json(counts_per_file(r), "file")},
                      {"gpus", counts_json(counts_per_gpu(r), "gpu")},
                      {"figures", figures}};
  if (r.seeds > 1) j["seeds"] = r.seeds;
  if (!r.sets.empty()) j["set"] = r.sets;
  return j;
}

void write_validation_table(std::ostream& os, const ValidationReport& r) {
  int passed = 0;
  std::size_t label_w = 46;
  for (const auto& f : r.figures) label_w = std::max(label_w, f.label.size() + 1);
  const int check_w = static_cast<int>(label_w);
  os << std::left << std::setw(check_w) << "check" << std::setw(8) << "arm" << std::setw(31)
     << "metric" << std::right << std::setw(10) << "measured" << std::setw(11) << "simulated"
     << std::setw(9) << "error" << std::setw(10) << "tolerance"
     << "  ok" << (r.seeds > 1 ? "   seeds ok  range" : "") << "\n";
  for (const auto& f : r.figures) {
    passed += f.ok ? 1 : 0;
    const std::string err = error_text(f);
    const std::string tol = tolerance_text(f);
    os << std::left << std::setw(check_w) << f.label << std::setw(8) << f.arm << std::setw(31)
       << metric_text(f) << std::right << std::setw(10) << fmt(f.measured) << std::setw(11)
       << fmt(f.simulated) << std::setw(9) << err << std::setw(10) << tol << "  "
       << (f.ok ? "yes" : "NO ");
    if (r.seeds > 1) os << "   " << std::setw(8) << seeds_text(f, r.seeds) << "  " << range_text(f);
    os << "\n";
  }
  const std::pair<std::vector<GroupCount>, const char*> groups[] = {{counts_per_file(r), ""},
                                                                    {counts_per_gpu(r), "on "}};
  for (const auto& [counts, prefix] : groups) {
    if (counts.size() < 2) continue;
    for (const auto& c : counts) {
      os << "  " << prefix << c.name << ": " << c.passed << " of " << c.total << ", "
         << mean_error_text(c) << "\n";
    }
  }
  os << passed << " of " << r.figures.size() << " figures inside their tolerance";
  if (r.seeds > 1) os << " (simulated: the mean over " << r.seeds << " seeds)";
  if (!r.sets.empty()) os << ", every check with " << join(r.sets, ", ");
  os << "; " << mean_error_text(count_all(r)) << "\n";
}

void write_validation_markdown(std::ostream& os, const ValidationReport& r,
                               const std::string& command) {
  int passed = 0;
  for (const auto& f : r.figures) passed += f.ok ? 1 : 0;
  os << "# Fidelity report\n\nGenerated by `" << command << "`; do not edit by hand.\n\n"
     << passed << " of " << r.figures.size() << " figures are inside their tolerance; "
     << mean_error_text(count_all(r), "are ") << ".\n\n";
  const auto summary = [&os](const std::vector<GroupCount>& counts, const char* what) {
    if (counts.size() < 2) return;
    os << "| " << what << " | inside | figures | mean \\|error\\| of its relative figures |\n"
       << "|---|---|---|---|\n";
    for (const auto& c : counts) {
      os << "| " << c.name << " | " << c.passed << " | " << c.total << " | "
         << (c.relative > 0 ? fmt(c.mean_abs_error_pct()) + "% (" + std::to_string(c.relative) + ")"
                            : "-")
         << " |\n";
    }
    os << "\n";
  };
  summary(counts_per_file(r), "validation file");
  summary(counts_per_gpu(r), "GPU");
  if (r.seeds > 1) {
    os << "Simulated: the mean over " << r.seeds
       << " seeds (each scenario's own, then the next ones), judged against the tolerance; "
          "\"seeds ok\" counts the seeds whose own figure passes, \"range\" spans them (for a "
          "shape, the shape of the mean curve is judged).\n\n";
  }
  for (const auto& s : r.sources) os << "- source: " << s << "\n";
  os << "\n| check | arm | metric | measured | simulated | error | tolerance | ok |"
     << (r.seeds > 1 ? " seeds ok | range |" : "") << "\n"
     << "|---|---|---|---|---|---|---|---|" << (r.seeds > 1 ? "---|---|" : "") << "\n";
  for (const auto& f : r.figures) {
    const std::string err = error_text(f);
    const std::string tol = tolerance_text(f);
    os << "| " << f.label << " | " << f.arm << " | " << metric_text(f) << " | " << fmt(f.measured)
       << " | " << fmt(f.simulated) << " | " << err << " | " << tol << " | "
       << (f.ok ? "yes" : "**no**") << " |";
    if (r.seeds > 1) os << " " << seeds_text(f, r.seeds) << " | " << range_text(f) << " |";
    os << "\n";
  }
}

}  // namespace fleetsim
