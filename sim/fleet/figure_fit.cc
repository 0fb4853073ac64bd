#include "sim/fleet/figure_fit.h"

#include <yaml-cpp/yaml.h>

#include <spdlog/spdlog.h>
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <unsupported/Eigen/LevenbergMarquardt>

#include "models/cost_model.h"
#include "models/gpu_catalog.h"
#include "sim/errors.h"

namespace fleetsim {

namespace {

constexpr const char* kSetPrefix = "fleet.cost_model.";
// Central differences of +-5% in a constant: wide enough that the steps of a discrete-event
// simulation (a request joining one engine step or the next) do not dominate the slope.
constexpr double kDiffStep = 0.05;
// A figure the simulation stops producing mid-fit (NaN) counts as this many tolerances off.
constexpr double kMissingPenalty = 100;

std::string num(double v, const char* format = "%.6g") {
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// A figure as the table shows it: whole above 100, else to two decimals or three digits.
std::string figure(double v) {
  const double a = std::fabs(v);
  return num(v, a >= 100 ? "%.0f" : a >= 1 ? "%.2f" : "%.3g");
}

// The cost_model parameter a PATH=VALUE names, and its value as written; nullopt for a set of
// anything else.
std::optional<std::pair<std::string, std::string>> cost_model_set(const std::string& set) {
  const auto eq = set.find('=');
  if (eq == std::string::npos || !set.starts_with(kSetPrefix)) return std::nullopt;
  const size_t start = std::string_view(kSetPrefix).size();
  return std::pair{set.substr(start, eq - start), set.substr(eq + 1)};
}

// A figure the fit can weigh: a tolerance above 0 and an error it can compute (a simulated
// figure, a measurement not 0 under a relative tolerance).
bool fitted(const FigureCheck& f) {
  return f.rule == FigureCheck::Rule::kTolerance && f.tolerance > 0 && std::isfinite(f.error);
}

// The key of a figure across reports: a report's figures come in the files' order, so the
// fitted ones are picked once by position.
std::vector<size_t> fitted_positions(const ValidationReport& r) {
  std::vector<size_t> out;
  for (size_t i = 0; i < r.figures.size(); ++i) {
    if (fitted(r.figures[i])) out.push_back(i);
  }
  return out;
}

std::string one_gpu(const ValidationReport& r) {
  std::set<std::string> gpus;
  for (const auto& f : r.figures) gpus.insert(f.gpu);
  return gpus.size() == 1 ? *gpus.begin() : "";
}

// Where a parameter starts: the caller's set, else the spec's default, with bandwidth
// efficiency's 0 (the GPU's measured one) resolved for the checks' one GPU.
double start_of(const std::string& name, const std::map<std::string, double>& given,
                const std::string& gpu) {
  if (const auto it = given.find(name); it != given.end()) return it->second;
  double v = cost_model_spec().defaults().get_double(name);
  if (name == "bandwidth_efficiency" && v == 0) {
    v = kDefaultBandwidthEfficiency;
    if (!gpu.empty()) {
      try {
        if (find_gpu(gpu).bandwidth_efficiency > 0) v = find_gpu(gpu).bandwidth_efficiency;
      } catch (const UnknownNameError&) {  // the scenario's own GPU: the pooled value
      }
    }
  }
  return v;
}

struct Fit {
  const FigureFitOptions& options;
  std::vector<std::string> base_sets;
  std::vector<FigureFitParam> params;
  std::vector<size_t> positions;
  std::map<std::string, ValidationReport> reports;  // by the sets that produced them
  int evaluations = 0;
  int budget = 0;  // evaluations allowed
  double best_cost = INFINITY;
  Eigen::VectorXd best_x;

  double value(size_t i, double x) const {
    const FigureFitParam& p = params[i];
    // Rounded as written, so the printed value reproduces the fit's figures exactly.
    return std::stod(num(std::clamp(p.start * std::exp(x), p.lo, p.hi)));
  }

  std::vector<std::string> sets_at(const Eigen::VectorXd& x) const {
    std::vector<std::string> sets = base_sets;
    for (size_t i = 0; i < params.size(); ++i) {
      sets.push_back(kSetPrefix + params[i].name + "=" +
                     num(value(i, x(static_cast<Eigen::Index>(i)))));
    }
    return sets;
  }

  // The report at x; false once the evaluation budget is spent.
  const ValidationReport* report(const Eigen::VectorXd& x) {
    const std::vector<std::string> sets = sets_at(x);
    const std::string key = join(sets, "\n");
    if (const auto it = reports.find(key); it != reports.end()) return &it->second;
    if (evaluations >= budget) return nullptr;
    ++evaluations;
    return &reports.emplace(key, validate(options.files, options.threads, options.seeds, sets))
                .first->second;
  }

  bool residuals(const Eigen::VectorXd& x, Eigen::VectorXd& r) {
    const ValidationReport* rep = report(x);
    if (rep == nullptr) return false;
    r.resize(static_cast<Eigen::Index>(positions.size()));
    for (size_t k = 0; k < positions.size(); ++k) {
      const FigureCheck& f = rep->figures[positions[k]];
      r(static_cast<Eigen::Index>(k)) =
          std::isfinite(f.error) ? f.error / f.tolerance : kMissingPenalty;
    }
    if (const double cost = r.squaredNorm(); cost < best_cost) {
      best_cost = cost;
      best_x = x;
    }
    return true;
  }

  // The sum of squared residuals at an evaluated point.
  double report_cost(const Eigen::VectorXd& x) {
    Eigen::VectorXd r;
    return residuals(x, r) ? r.squaredNorm() : NAN;
  }

  bool jacobian(const Eigen::VectorXd& x, Eigen::MatrixXd& j) {
    j.resize(static_cast<Eigen::Index>(positions.size()), x.size());
    Eigen::VectorXd up, down;
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      Eigen::VectorXd xu = x, xd = x;
      xu(i) += kDiffStep;
      xd(i) -= kDiffStep;
      if (!residuals(xu, up) || !residuals(xd, down)) return false;
      // The step actually taken, as a bound may have cut it.
      const double dx = std::log(value(static_cast<size_t>(i), xu(i))) -
                        std::log(value(static_cast<size_t>(i), xd(i)));
      j.col(i) = dx > 0 ? Eigen::VectorXd((up - down) / dx)
                        : Eigen::VectorXd::Zero(static_cast<Eigen::Index>(positions.size()));
    }
    return true;
  }
};

struct Objective : Eigen::DenseFunctor<double> {
  Fit* fit;
  Objective(Fit* f, int inputs, int values) : DenseFunctor(inputs, values), fit(f) {}
  int operator()(const InputType& x, ValueType& r) const { return fit->residuals(x, r) ? 0 : -1; }
  int df(const InputType& x, JacobianType& j) const { return fit->jacobian(x, j) ? 0 : -1; }
};

std::string stop_text(Eigen::LevenbergMarquardtSpace::Status s, bool budget_spent) {
  using namespace Eigen::LevenbergMarquardtSpace;
  if (budget_spent) return "the evaluation budget ran out (--max-evaluations)";
  switch (s) {
    case RelativeReductionTooSmall:
    case RelativeErrorAndReductionTooSmall:
      return "converged: the error stopped falling";
    case RelativeErrorTooSmall:
      return "converged: the constants stopped moving";
    case CosinusTooSmall:
    case GtolTooSmall:
      return "converged: the errors are orthogonal to every direction the constants move them";
    case FtolTooSmall:
    case XtolTooSmall:
      return "stopped: no further improvement is possible at this precision";
    case TooManyFunctionEvaluation:
      return "the evaluation budget ran out (--max-evaluations)";
    default:
      return "stopped";
  }
}

double rms(const ValidationReport& r, const std::vector<size_t>& positions) {
  double sum = 0;
  for (const size_t i : positions) {
    const FigureCheck& f = r.figures[i];
    const double e = std::isfinite(f.error) ? f.error / f.tolerance : kMissingPenalty;
    sum += e * e;
  }
  return positions.empty() ? 0 : std::sqrt(sum / static_cast<double>(positions.size()));
}

int inside(const ValidationReport& r) {
  return static_cast<int>(
      std::count_if(r.figures.begin(), r.figures.end(), [](const FigureCheck& f) { return f.ok; }));
}

}  // namespace

std::vector<std::string> fittable_cost_model_params() {
  std::vector<std::string> names;
  for (const auto& d : cost_model_spec().defs()) {
    if (d.type == ParamType::kDouble && d.help.starts_with("roofline:")) names.push_back(d.name);
  }
  return names;
}

FigureFitResult fit_to_figures(const FigureFitOptions& o) {
  if (o.files.empty()) throw Error("--against: give at least one file of measured figures");
  if (o.max_evaluations < 1) {
    throw Error("--max-evaluations: expected at least 1, got " + std::to_string(o.max_evaluations));
  }
  const std::vector<std::string> valid = fittable_cost_model_params();
  std::vector<std::string> names =
      o.fit.empty() ? std::vector<std::string>{"compute_efficiency", "bandwidth_efficiency"}
                    : o.fit;
  std::set<std::string> seen;
  for (const auto& n : names) {
    if (std::find(valid.begin(), valid.end(), n) == valid.end()) {
      throw UnknownNameError("fittable cost_model parameter", n, valid);
    }
    if (!seen.insert(n).second) throw Error("--fit " + n + ": given twice; name each once");
  }

  FigureFitResult result;
  result.files = o.files;
  std::map<std::string, double> given;
  for (const auto& s : o.sets) {
    const auto named = cost_model_set(s);
    if (named && (named->first == "calibration" || named->first == "type")) {
      throw Error(std::string("--set ") + kSetPrefix + named->first +
                  ": the fit writes a roofline calibration file of its own; give the constants "
                  "to start from or to hold as " +
                  kSetPrefix + "NAME=VALUE");
    }
    if (named && seen.count(named->first) > 0) {
      double v = 0;
      if (!parse_finite(named->second, v) || v <= 0) {
        throw Error("--set " + s +
                    ": a fitted constant starts where this says; expected a "
                    "number > 0");
      }
      given[named->first] = v;
      continue;
    }
    result.sets.push_back(s);
  }

  // A constant whose default is a sentinel 0 has no start to scale, before anything runs.
  for (const auto& n : names) {
    if (given.count(n) == 0 && n != "bandwidth_efficiency" &&
        cost_model_spec().defaults().get_double(n) == 0) {
      throw Error("--fit " + n + ": it starts at 0, which a fit in proportions cannot leave; " +
                  "give a start with --set " + std::string(kSetPrefix).append(n) + "=VALUE");
    }
  }
  result.before = validate(o.files, o.threads, o.seeds, result.sets);
  // The checks' warnings were said once, by the run above; the fit's runs would repeat them.
  struct QuietWarnings {
    spdlog::level::level_enum was = spdlog::get_level();
    QuietWarnings() { spdlog::set_level(std::max(was, spdlog::level::err)); }
    ~QuietWarnings() { spdlog::set_level(was); }
  } quiet;
  Fit fit{o,        result.sets, {}, fitted_positions(result.before), {}, 0, o.max_evaluations,
          INFINITY, {}};
  result.gpu = one_gpu(result.before);
  result.fitted_figures = static_cast<int>(fit.positions.size());
  if (fit.positions.size() < names.size()) {
    throw Error(join(o.files, ", ") + ": " + std::to_string(fit.positions.size()) +
                " figure(s) with a tolerance to fit cannot pin " + std::to_string(names.size()) +
                " constant(s) (" + join(names, ", ") +
                "); measure more figures or fit fewer constants (--fit)");
  }
  const auto& defs = cost_model_spec().defs();
  for (const auto& n : names) {
    const auto def =
        std::find_if(defs.begin(), defs.end(), [&](const ParamDef& d) { return d.name == n; });
    FigureFitParam p;
    p.name = n;
    p.start = start_of(n, given, result.gpu);
    p.lo = std::max(def->min, 1e-6);
    p.hi = std::min(def->max, 1e12);  // finite, so a wandering step stays a number
    fit.params.push_back(p);
  }

  const auto n = static_cast<int>(names.size());
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  Objective objective(&fit, n, static_cast<int>(fit.positions.size()));
  Eigen::LevenbergMarquardt<Objective> lm(objective);
  lm.setXtol(1e-3);  // a thousandth of a constant is below what the figures can tell
  lm.setFtol(1e-4);
  lm.setMaxfev(o.max_evaluations);
  const auto status = lm.minimize(x);
  const bool spent =
      fit.evaluations >= o.max_evaluations && status == Eigen::LevenbergMarquardtSpace::UserAsked;
  result.stop_reason = stop_text(status, spent);
  // The best point evaluated (LM's last step, or a point of a Jacobian that did better).
  const Eigen::VectorXd best = fit.best_x.size() == 0 ? Eigen::VectorXd::Zero(n) : fit.best_x;

  // Standard errors from a Jacobian at the result, beyond the fit's budget.
  fit.budget = fit.evaluations + 2 * n;
  Eigen::MatrixXd j;
  const bool have_j = fit.jacobian(best, j);
  // Over the constants that move some figure: one that moves none is unpinned on its own.
  std::vector<Eigen::Index> moving;
  for (Eigen::Index i = 0; have_j && i < n; ++i) {
    if (j.col(i).norm() > 0) moving.push_back(i);
  }
  const auto m = static_cast<double>(fit.positions.size());
  const double variance = m > n ? fit.report_cost(best) / (m - n) : 0;
  std::vector<double> std_x(static_cast<size_t>(n), NAN);
  if (!moving.empty()) {
    Eigen::MatrixXd jm(j.rows(), static_cast<Eigen::Index>(moving.size()));
    for (size_t k = 0; k < moving.size(); ++k) {
      jm.col(static_cast<Eigen::Index>(k)) = j.col(moving[k]);
    }
    const Eigen::FullPivLU<Eigen::MatrixXd> lu(jm.transpose() * jm);
    if (lu.rank() == jm.cols()) {  // else two move the figures only together: none is pinned
      const Eigen::MatrixXd covariance = lu.inverse() * variance;
      for (size_t k = 0; k < moving.size(); ++k) {
        const auto c = static_cast<Eigen::Index>(k);
        std_x[static_cast<size_t>(moving[k])] = std::sqrt(std::max(covariance(c, c), 0.0));
      }
    }
  }
  for (Eigen::Index i = 0; i < n; ++i) {
    FigureFitParam& p = fit.params[static_cast<size_t>(i)];
    p.value = fit.value(static_cast<size_t>(i), best(i));
    p.at_bound = p.value <= p.lo || p.value >= p.hi;
    p.std_error = p.value * std_x[static_cast<size_t>(i)];  // the delta method: p = start e^x
  }
  result.after = *fit.report(best);  // evaluated already
  result.params = fit.params;
  result.evaluations = fit.evaluations;
  result.rms_before = rms(result.before, fit.positions);
  result.rms_after = rms(result.after, fit.positions);
  return result;
}

std::string figure_fit_yaml(const FigureFitResult& r) {
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "cost_model" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "type" << YAML::Value << "roofline";
  for (const auto& p : r.params) e << YAML::Key << p.name << YAML::Value << num(p.value);
  // Held cost_model values of the caller's sets: the fit assumed them.
  for (const auto& s : r.sets) {
    if (const auto named = cost_model_set(s)) {
      e << YAML::Key << named->first << YAML::Value << named->second;
    }
  }
  e << YAML::EndMap << YAML::Key << "fit" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "form" << YAML::Value << "figures";
  e << YAML::Key << "cost_model_revision" << YAML::Value << kRooflineRevision;
  e << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted << join(r.files, ", ");
  if (!r.gpu.empty()) e << YAML::Key << "gpu" << YAML::Value << YAML::DoubleQuoted << r.gpu;
  e << YAML::Key << "sets" << YAML::Value << YAML::Flow << r.sets;
  e << YAML::Key << "start" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& p : r.params) e << YAML::Key << p.name << YAML::Value << num(p.start);
  e << YAML::EndMap << YAML::Key << "std_errors" << YAML::Value << YAML::Flow << YAML::BeginMap;
  for (const auto& p : r.params) {
    e << YAML::Key << p.name << YAML::Value
      << (std::isnan(p.std_error) ? "unpinned" : num(p.std_error));
  }
  e << YAML::EndMap;
  e << YAML::Key << "figures" << YAML::Value << r.fitted_figures;
  e << YAML::Key << "inside" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "before"
    << YAML::Value << inside(r.before) << YAML::Key << "after" << YAML::Value << inside(r.after)
    << YAML::Key << "of" << YAML::Value << r.after.figures.size() << YAML::EndMap;
  e << YAML::Key << "rms_tolerances" << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key
    << "before" << YAML::Value << num(r.rms_before) << YAML::Key << "after" << YAML::Value
    << num(r.rms_after) << YAML::EndMap;
  e << YAML::Key << "evaluations" << YAML::Value << r.evaluations;
  e << YAML::Key << "stop" << YAML::Value << r.stop_reason;
  e << YAML::EndMap << YAML::EndMap;
  return std::string(
             "# Cost-model calibration written by `fleetsim calibrate --against` (see "
             "docs/calibration.md).\n# A scenario uses it as fleet.cost_model.calibration; "
             "fields set beside it override the values below.\n") +
         e.c_str() + "\n";
}

std::string figure_fit_table(const FigureFitResult& r) {
  std::ostringstream os;
  os << "calibration: " << r.params.size() << " constant(s) fitted to " << r.fitted_figures
     << " measured figure(s) of " << join(r.files, ", ") << " by simulating them (" << r.evaluations
     << " evaluations; " << r.stop_reason << ")\n\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-24s %10s %10s %10s  %s\n", "parameter", "start", "fitted",
                "std error", "range");
  os << line;
  for (const auto& p : r.params) {
    std::snprintf(line, sizeof(line), "%-24s %10s %10s %10s  [%s, %s]%s\n", p.name.c_str(),
                  num(p.start).c_str(), num(p.value).c_str(),
                  std::isnan(p.std_error) ? "unpinned" : num(p.std_error, "%.3g").c_str(),
                  num(p.lo).c_str(), num(p.hi).c_str(), p.at_bound ? "  at its bound" : "");
    os << line;
  }
  // One row per figure: the measurement, then the simulation before and after.
  std::vector<std::string> names;
  size_t width = 6;
  for (const auto& f : r.after.figures) {
    names.push_back(f.label + "  " + f.arm + "  " + f.metric);
    width = std::max(width, names.back().size());
  }
  const auto w = static_cast<int>(width);
  std::snprintf(line, sizeof(line), "\n%-*s %10s %10s %10s %9s %9s  %s\n", w, "figure", "measured",
                "before", "after", "error", "tolerance", "ok");
  os << line;
  for (size_t i = 0; i < r.after.figures.size(); ++i) {
    const FigureCheck& b = r.before.figures[i];
    const FigureCheck& f = r.after.figures[i];
    const bool rel = f.rule == FigureCheck::Rule::kTolerance && f.relative;
    const std::string error = rel ? num(100 * f.error, "%.1f") + "%" : figure(f.error);
    const std::string tolerance = f.rule != FigureCheck::Rule::kTolerance ? "shape"
                                  : rel ? num(100 * f.tolerance, "%.0f") + "%"
                                        : figure(f.tolerance);
    std::snprintf(line, sizeof(line), "%-*s %10s %10s %10s %9s %9s  %s\n", w, names[i].c_str(),
                  figure(f.measured).c_str(), figure(b.simulated).c_str(),
                  figure(f.simulated).c_str(), error.c_str(), tolerance.c_str(),
                  f.ok ? "yes" : "NO");
    os << line;
  }
  os << "inside their tolerance: " << inside(r.before) << " before, " << inside(r.after)
     << " after, of " << r.after.figures.size()
     << "; error in tolerances (rms): " << num(r.rms_before, "%.3g") << " before, "
     << num(r.rms_after, "%.3g") << " after\n";
  return os.str();
}

nlohmann::json figure_fit_json(const FigureFitResult& r) {
  nlohmann::json j;
  j["form"] = "figures";
  j["files"] = r.files;
  j["sets"] = r.sets;
  j["gpu"] = r.gpu;
  nlohmann::json cost_model = {{"type", "roofline"}};
  for (const auto& p : r.params) {
    cost_model[p.name] = p.value;
    j["params"][p.name] = {{"start", p.start},
                           {"value", p.value},
                           {"std_error", std::isnan(p.std_error) ? nlohmann::json(nullptr)
                                                                 : nlohmann::json(p.std_error)},
                           {"range", nlohmann::json::array({p.lo, p.hi})},
                           {"at_bound", p.at_bound}};
  }
  j["cost_model"] = cost_model;
  j["fitted_figures"] = r.fitted_figures;
  j["evaluations"] = r.evaluations;
  j["stop"] = r.stop_reason;
  j["rms_tolerances"] = {{"before", r.rms_before}, {"after", r.rms_after}};
  j["before"] = validation_json(r.before);
  j["after"] = validation_json(r.after);
  return j;
}

}  // namespace fleetsim
