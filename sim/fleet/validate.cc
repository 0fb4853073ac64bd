#include "sim/fleet/validate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/report.h"
#include "sim/fleet/sweep.h"

namespace fleetsim {
namespace {

std::string fmt(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(std::fabs(v) >= 100 ? 0 : 2) << v;
  return os.str();
}

const ArmResult& arm_of(const RunResult& r, const std::string& arm, const std::string& where) {
  for (const auto& a : r.arms) {
    if (a.name == arm) return a;
  }
  throw ScenarioError(where + ": no arm '" + arm + "' in scenario " + r.scenario);
}

FigureCheck check(const YAML::Node& f, const std::string& where, const std::string& file,
                  const std::string& label, const RunResult& run) {
  FigureCheck c;
  const ParamSpec spec =
      ParamSpec()
          .text("arm", "", "arm name")
          .text("metric", "", "an arm metric's name (fleetsim list metrics)")
          .real("measured", 0, "the measured value")
          .real("abs", -1, "absolute tolerance (same unit as the metric)")
          .real("rel", -1, "relative tolerance (fraction of the measured value)");
  YAML::Node copy = YAML::Clone(f);
  copy.remove("point");
  const Params p = spec.resolve(copy, {file, where});
  c.file = file;
  c.label = label;
  c.arm = p.get_string("arm");
  c.metric = p.get_string("metric");
  c.measured = p.get_double("measured");
  c.simulated = arm_metric(c.metric).value(arm_of(run, c.arm, where));
  c.relative = p.get_double("rel") >= 0;
  c.tolerance = c.relative ? p.get_double("rel") : p.get_double("abs");
  if (c.tolerance < 0) throw ScenarioError(file + ": " + where + ": give abs or rel");
  c.error = c.relative ? (c.simulated - c.measured) / c.measured : c.simulated - c.measured;
  c.ok = std::fabs(c.error) <= c.tolerance + 1e-12;
  return c;
}

// A shape of one arm's curve along a sweep of a single varied path (numeric values).
FigureCheck shape_check(const YAML::Node& f, const std::string& where, const std::string& file,
                        const SweepResult& sweep) {
  const ParamSpec spec =
      ParamSpec()
          .text("arm", "", "arm name")
          .text("metric", "", "an arm metric's name (fleetsim list metrics)")
          .real("peak_at", std::nan(""), "the varied value at which the measured curve peaks")
          .real("rising_at_end", std::nan(""),
                "the measured change from the next-to-last point to the last (> 0)");
  const Params p = spec.resolve(f, {file, where});
  const bool peak = !std::isnan(p.get_double("peak_at"));
  if (peak == !std::isnan(p.get_double("rising_at_end"))) {
    throw ScenarioError(file + ": " + where + ": give one of peak_at or rising_at_end");
  }
  if (sweep.points.size() < 2 || sweep.points.front().vary.size() != 1) {
    throw ScenarioError(file + ": " + where +
                        ": shapes need a sweep of one varied path with 2 or more points");
  }
  FigureCheck c;
  c.file = file;
  c.arm = p.get_string("arm");
  c.metric = p.get_string("metric");
  const ArmMetric& metric = arm_metric(c.metric);
  const std::string& path = sweep.points.front().vary.front().first;
  c.label = sweep.scenario + " " + path + " (curve)";
  std::vector<double> x;
  std::vector<double> y;
  for (const auto& sp : sweep.points) {
    const std::string& value = sp.vary.front().second;
    try {
      x.push_back(std::stod(value));
    } catch (const std::exception&) {
      throw ScenarioError(file + ": " + where + ": " + path + " = '" + value +
                          "' is not a number; shapes need a numeric axis");
    }
    y.push_back(metric.value(arm_of(sp.result, c.arm, where)));
  }
  if (peak) {
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

}  // namespace

bool ValidationReport::all_ok() const {
  for (const auto& f : figures) {
    if (!f.ok) return false;
  }
  return !figures.empty();
}

ValidationReport validate(const std::vector<std::string>& files, int threads) {
  ValidationReport report;
  for (const auto& file : files) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(file);
    } catch (const YAML::Exception& e) {
      throw ScenarioError(file + ": " + e.what());
    }
    if (root["source"].IsDefined()) report.sources.push_back(root["source"].as<std::string>());
    const YAML::Node checks = root["checks"];
    if (!checks.IsSequence()) throw ScenarioError(file + ": expected a list 'checks'");
    for (size_t i = 0; i < checks.size(); ++i) {
      const YAML::Node c = checks[i];
      const std::string where = "checks." + std::to_string(i);
      std::vector<std::string> sets;
      for (const auto& s : c["set"]) sets.push_back(s.as<std::string>());
      if (c["scenario"].IsDefined()) {
        const std::string path = c["scenario"].as<std::string>();
        const Scenario s = load_scenario(path, sets);
        const RunResult run = run_scenario(s, threads);
        std::string label = s.name;
        for (const auto& x : sets) label += " " + x;
        for (const auto& f : c["figures"])
          report.figures.push_back(check(f, where, file, label, run));
      } else if (c["sweep"].IsDefined()) {
        const SweepResult sweep = run_sweep(c["sweep"].as<std::string>(), sets, {}, threads);
        for (const auto& f : c["figures"]) {
          const YAML::Node point = f["point"];
          const SweepPoint* match = nullptr;
          for (const auto& sp : sweep.points) {
            bool same = point.IsMap();
            for (const auto& [k, v] : sp.vary) {
              same = same && point[k].IsDefined() && point[k].Scalar() == v;
            }
            if (same) match = &sp;
          }
          if (!match) throw ScenarioError(file + ": " + where + ": no sweep point matches");
          std::string label = sweep.scenario;
          for (const auto& [k, v] : match->vary) label += " " + k + "=" + v;
          report.figures.push_back(check(f, where, file, label, match->result));
        }
        for (const auto& f : c["shapes"]) {
          report.figures.push_back(shape_check(f, where, file, sweep));
        }
      } else {
        throw ScenarioError(file + ": " + where + ": expected 'scenario' or 'sweep'");
      }
    }
  }
  return report;
}

nlohmann::json validation_json(const ValidationReport& r) {
  nlohmann::json figures = nlohmann::json::array();
  for (const auto& f : r.figures) {
    figures.push_back({{"file", f.file},
                       {"check", f.label},
                       {"arm", f.arm},
                       {"metric", f.metric},
                       {"rule", f.rule == FigureCheck::Rule::kPeakAt        ? "peak_at"
                                : f.rule == FigureCheck::Rule::kRisingAtEnd ? "rising_at_end"
                                                                            : "tolerance"},
                       {"measured", f.measured},
                       {"simulated", std::round(f.simulated * 1e4) / 1e4},
                       {"error", std::round(f.error * 1e4) / 1e4},
                       {"tolerance", f.tolerance},
                       {"relative", f.relative},
                       {"ok", f.ok}});
  }
  return {{"sources", r.sources}, {"all_ok", r.all_ok()}, {"figures", figures}};
}

void write_validation_table(std::ostream& os, const ValidationReport& r) {
  int passed = 0;
  os << std::left << std::setw(46) << "check" << std::setw(8) << "arm" << std::setw(31) << "metric"
     << std::right << std::setw(10) << "measured" << std::setw(11) << "simulated" << std::setw(9)
     << "error" << std::setw(10) << "tolerance"
     << "  ok\n";
  for (const auto& f : r.figures) {
    passed += f.ok ? 1 : 0;
    const std::string err = error_text(f);
    const std::string tol = tolerance_text(f);
    os << std::left << std::setw(46) << f.label.substr(0, 45) << std::setw(8) << f.arm
       << std::setw(31) << metric_text(f) << std::right << std::setw(10) << fmt(f.measured)
       << std::setw(11) << fmt(f.simulated) << std::setw(9) << err << std::setw(10) << tol << "  "
       << (f.ok ? "yes" : "NO") << "\n";
  }
  os << passed << " of " << r.figures.size() << " figures inside their tolerance\n";
}

void write_validation_markdown(std::ostream& os, const ValidationReport& r,
                               const std::string& command) {
  int passed = 0;
  for (const auto& f : r.figures) passed += f.ok ? 1 : 0;
  os << "# Fidelity report\n\nGenerated by `" << command << "`; do not edit by hand.\n\n"
     << passed << " of " << r.figures.size() << " figures are inside their tolerance.\n\n";
  for (const auto& s : r.sources) os << "- source: " << s << "\n";
  os << "\n| check | arm | metric | measured | simulated | error | tolerance | ok |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  for (const auto& f : r.figures) {
    const std::string err = error_text(f);
    const std::string tol = tolerance_text(f);
    os << "| " << f.label << " | " << f.arm << " | " << metric_text(f) << " | " << fmt(f.measured)
       << " | " << fmt(f.simulated) << " | " << err << " | " << tol << " | "
       << (f.ok ? "yes" : "**no**") << " |\n";
  }
}

}  // namespace fleetsim
