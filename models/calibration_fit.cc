#include "models/calibration.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <utility>

#include "models/calibration_internal.h"
#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

using calibration_detail::fmt;

// ---------------------------------------------------------------------------------------------
// Least squares.

// Weighted least squares y ~ X b with row weights w, on columns scaled to a maximum of 1 (so a
// column of sum(l^2) ~ 1e8 and a column of ones are judged alike). When X has not full column
// rank, `zero` and `dependent` say why and nothing is solved.
struct LeastSquares {
  std::vector<Eigen::Index> zero;  // columns that are 0 in every row
  // A column that is a combination of others, and those others.
  std::vector<std::pair<Eigen::Index, std::vector<Eigen::Index>>> dependent;
  Eigen::VectorXd beta;
  Eigen::VectorXd std_error;
  bool ok() const { return zero.empty() && dependent.empty(); }
};

LeastSquares weighted_least_squares(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                    const Eigen::VectorXd& w) {
  LeastSquares r;
  const Eigen::Index n = x.rows();
  const Eigen::Index p = x.cols();
  if (p == 0) return r;
  Eigen::MatrixXd xw = w.asDiagonal() * x;
  const Eigen::VectorXd yw = w.cwiseProduct(y);
  Eigen::VectorXd scale(p);
  for (Eigen::Index j = 0; j < p; ++j) {
    scale(j) = xw.col(j).cwiseAbs().maxCoeff();
    if (scale(j) == 0) r.zero.push_back(j);
  }
  if (!r.zero.empty()) return r;
  xw = xw * scale.cwiseInverse().asDiagonal();
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(xw);
  qr.setThreshold(1e-9);
  if (qr.rank() < p) {
    const auto& perm = qr.colsPermutation().indices();
    std::vector<Eigen::Index> independent;
    for (Eigen::Index k = 0; k < qr.rank(); ++k) independent.push_back(perm(k));
    std::sort(independent.begin(), independent.end());
    Eigen::MatrixXd base(n, static_cast<Eigen::Index>(independent.size()));
    for (size_t k = 0; k < independent.size(); ++k) {
      base.col(static_cast<Eigen::Index>(k)) = xw.col(independent[k]);
    }
    for (Eigen::Index k = qr.rank(); k < p; ++k) {
      const Eigen::Index d = perm(k);
      std::vector<Eigen::Index> with;
      if (base.cols() > 0) {
        const Eigen::VectorXd c = base.colPivHouseholderQr().solve(xw.col(d));
        for (Eigen::Index m = 0; m < c.size(); ++m) {
          if (std::fabs(c(m)) > 1e-6) with.push_back(independent[static_cast<size_t>(m)]);
        }
      }
      r.dependent.emplace_back(d, std::move(with));
    }
    return r;
  }
  const Eigen::VectorXd scaled = qr.solve(yw);
  const Eigen::VectorXd residual = yw - xw * scaled;
  const double dof = static_cast<double>(n - p);
  const double sigma2 = dof > 0 ? residual.squaredNorm() / dof : 0.0;
  const Eigen::MatrixXd xtx = xw.transpose() * xw;
  const Eigen::MatrixXd cov =
      xtx.ldlt().solve(Eigen::MatrixXd::Identity(p, p)) * sigma2;  // of the scaled coefficients
  r.beta = scaled.cwiseQuotient(scale);
  r.std_error = cov.diagonal().cwiseMax(0.0).cwiseSqrt().cwiseQuotient(scale);
  return r;
}

// A parameter the fit solves for, or holds at a fixed value.
struct Unknown {
  std::string name;
  std::string unit;
  std::string zero_reason;  // why its column can be all zeros
  std::string hint;         // what data identifies it
};

// Builds the message of a rank-deficient fit.
[[noreturn]] void unidentifiable(const std::string& form, const std::string& source,
                                 std::size_t rows, const std::vector<Unknown>& unknowns,
                                 const std::vector<size_t>& free, const LeastSquares& ls) {
  std::ostringstream os;
  os << "cannot fit the " << form << " form" << (source.empty() ? "" : " to " + source) << " ("
     << rows << " rows):";
  std::vector<std::string> fix;
  for (const Eigen::Index j : ls.zero) {
    const Unknown& u = unknowns[free[static_cast<size_t>(j)]];
    os << "\n  " << u.name << ": " << u.zero_reason << "; " << u.hint;
    fix.push_back(u.name);
  }
  for (const auto& [d, with] : ls.dependent) {
    const Unknown& u = unknowns[free[static_cast<size_t>(d)]];
    std::vector<std::string> names;
    for (const Eigen::Index k : with) names.push_back(unknowns[free[static_cast<size_t>(k)]].name);
    os << "\n  " << u.name << " cannot be told apart from "
       << (names.empty() ? std::string("the other coefficients") : join(names, ", "))
       << (names.size() == 1 ? " (in these rows its column is proportional to that one's); "
                             : " (in these rows its column is a linear combination of theirs); ")
       << u.hint;
    fix.push_back(u.name);
  }
  os << "\n  or hold " << (fix.size() == 1 ? "it" : "them") << " at a value: ";
  for (size_t i = 0; i < fix.size(); ++i) os << (i ? " " : "") << "--fix " << fix[i] << "=VALUE";
  throw Error(os.str());
}

FitQuality quality(const std::string& label, const std::vector<double>& measured,
                   const std::vector<double>& predicted) {
  FitQuality q;
  q.label = label;
  q.rows = static_cast<std::int64_t>(measured.size());
  if (measured.empty()) return q;
  double mean = 0;
  for (const double m : measured) mean += m;
  mean /= static_cast<double>(measured.size());
  double ss_res = 0, ss_tot = 0, abs_pct = 0;
  for (size_t i = 0; i < measured.size(); ++i) {
    const double e = predicted[i] - measured[i];
    ss_res += e * e;
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
    const double pct = 100.0 * std::fabs(e) / measured[i];
    abs_pct += pct;
    q.max_abs_error_pct = std::max(q.max_abs_error_pct, pct);
  }
  q.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 0.0;
  q.rmse_ms = std::sqrt(ss_res / static_cast<double>(measured.size()));
  q.mean_abs_error_pct = abs_pct / static_cast<double>(measured.size());
  return q;
}

// Quality overall and per group (groups in `order`; empty groups left out).
std::vector<FitQuality> qualities(const std::vector<StepSample>& steps,
                                  const std::vector<double>& predicted,
                                  const std::vector<std::string>& group,
                                  const std::vector<std::string>& order) {
  std::vector<double> all;
  all.reserve(steps.size());
  for (const auto& s : steps) all.push_back(s.step_ms);
  std::vector<FitQuality> out = {quality("all", all, predicted)};
  for (const auto& g : order) {
    std::vector<double> m, p;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (group[i] != g) continue;
      m.push_back(steps[i].step_ms);
      p.push_back(predicted[i]);
    }
    if (!m.empty()) out.push_back(quality(g, m, p));
  }
  return out;
}

void check_fixed(const CalibrationOptions& o, const std::vector<Unknown>& unknowns) {
  std::vector<std::string> valid;
  valid.reserve(unknowns.size());
  for (const auto& u : unknowns) valid.push_back(u.name);
  for (const auto& [name, value] : o.fixed) {
    if (std::find(valid.begin(), valid.end(), name) == valid.end()) {
      throw UnknownNameError(o.form + " parameter", name, valid);
    }
    if (!std::isfinite(value)) throw Error("--fix " + name + ": expected a finite number");
  }
}

// ---------------------------------------------------------------------------------------------
// The fitted form.

CalibrationResult fit_fitted(const std::vector<StepSample>& steps, const CalibrationOptions& o,
                             const std::string& source) {
  const std::vector<Unknown> unknowns = {
      {"prefill_a_ms", "ms", "no step has a prefill (an entry with more than one new token)",
       "time steps with prefills"},
      {"prefill_b_ms_per_token", "ms/token",
       "no step has a prefill (an entry with more than one new token)",
       "time prefills of several lengths"},
      {"prefill_c_ms_per_token2", "ms/token^2",
       "no step has a prefill (an entry with more than one new token)",
       "time prefills of several lengths, short and long (sum(l) and sum(l^2) must vary "
       "independently)"},
      {"decode_a_ms", "ms", "no step has a decode (an entry with one new token)",
       "time steps with decodes"},
      {"decode_b_ms_per_ctx_token", "ms/token",
       "every decode reads 0 context tokens or no step has a decode",
       "time decodes over several context lengths"},
      {"decode_c_ms_per_seq", "ms/request", "no step has a decode (an entry with one new token)",
       "time decode steps of several batch sizes (requests timed one at a time all have one "
       "decode per step)"},
  };
  check_fixed(o, unknowns);
  const auto n = static_cast<Eigen::Index>(steps.size());
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(n, 6);
  Eigen::VectorXd y(n), w(n);
  std::vector<std::string> group(steps.size());
  for (Eigen::Index i = 0; i < n; ++i) {
    const StepSample& s = steps[static_cast<size_t>(i)];
    double l = 0, l2 = 0, ctx = 0, decodes = 0;
    for (const auto& e : s.batch) {
      if (e.new_tokens > 1) {
        l += e.new_tokens;
        l2 += static_cast<double>(e.new_tokens) * e.new_tokens;
      } else if (e.new_tokens == 1) {
        ctx += e.context_tokens;
        decodes += 1;
      }
    }
    const bool prefill = l > 0;
    x.row(i) << (prefill ? 1.0 : 0.0), l, l2, (decodes > 0 ? 1.0 : 0.0), ctx, decodes;
    y(i) = s.step_ms;
    w(i) = 1.0 / s.step_ms;
    group[static_cast<size_t>(i)] = prefill && decodes > 0 ? "mixed"
                                    : prefill              ? "prefill_only"
                                                           : "decode_only";
  }
  std::vector<size_t> free;
  Eigen::VectorXd target = y;
  Eigen::VectorXd value = Eigen::VectorXd::Zero(6), se = Eigen::VectorXd::Zero(6);
  for (size_t j = 0; j < unknowns.size(); ++j) {
    const auto it = o.fixed.find(unknowns[j].name);
    if (it == o.fixed.end()) {
      free.push_back(j);
    } else {
      value(static_cast<Eigen::Index>(j)) = it->second;
      target -= x.col(static_cast<Eigen::Index>(j)) * it->second;
    }
  }
  if (!free.empty() && steps.size() <= free.size()) {
    throw Error("cannot fit the fitted form: " + std::to_string(steps.size()) + " rows for " +
                std::to_string(free.size()) + " coefficients; time more steps");
  }
  Eigen::MatrixXd xf(n, static_cast<Eigen::Index>(free.size()));
  for (size_t k = 0; k < free.size(); ++k) {
    xf.col(static_cast<Eigen::Index>(k)) = x.col(static_cast<Eigen::Index>(free[k]));
  }
  const LeastSquares ls = weighted_least_squares(xf, target, w);
  if (!ls.ok()) unidentifiable("fitted", source, steps.size(), unknowns, free, ls);
  for (size_t k = 0; k < free.size(); ++k) {
    value(static_cast<Eigen::Index>(free[k])) = ls.beta(static_cast<Eigen::Index>(k));
    se(static_cast<Eigen::Index>(free[k])) = ls.std_error(static_cast<Eigen::Index>(k));
  }

  CalibrationResult r;
  r.form = "fitted";
  for (size_t j = 0; j < unknowns.size(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    r.params.push_back({unknowns[j].name, value(jj), se(jj), o.fixed.count(unknowns[j].name) > 0,
                        unknowns[j].unit});
  }
  FittedCoefficients c;
  c.prefill_a_ms = value(0);
  c.prefill_b_ms_per_token = value(1);
  c.prefill_c_ms_per_token2 = value(2);
  c.decode_a_ms = value(3);
  c.decode_b_ms_per_ctx_token = value(4);
  c.decode_c_ms_per_seq = value(5);
  const FittedCostModel model(c);
  std::vector<double> predicted;
  predicted.reserve(steps.size());
  for (const auto& s : steps) predicted.push_back(model.step_time_ms(s.batch));
  r.quality = qualities(steps, predicted, group, {"prefill_only", "decode_only", "mixed"});
  return r;
}

// ---------------------------------------------------------------------------------------------
// The roofline form.

CalibrationResult fit_roofline(const std::vector<StepSample>& steps, const CalibrationOptions& o,
                               const std::string& source) {
  const RooflineTarget& t = o.target;
  if (t.gpu.empty() || t.model.empty()) {
    throw Error(
        "the roofline form needs the GPU and the model the steps ran on (--gpu, --model; "
        "fleetsim list gpus / fleetsim list models)");
  }
  const GpuSpec& gpu = find_gpu(t.gpu);
  const LlmSpec& llm = find_model(t.model);
  // Order of the unknowns: overhead, then k_c = 1 / compute_efficiency, k_m = 1 / bandwidth.
  const std::vector<Unknown> unknowns = {
      {"step_overhead_ms", "ms", "", "time steps of several sizes in the same regime"},
      {"compute_efficiency", "of peak",
       "no step is compute-bound at the current efficiencies (long prefills are)",
       "time prefills of several thousand new tokens"},
      {"bandwidth_efficiency", "of peak",
       "no step is memory-bound at the current efficiencies (decode batches are)",
       "time decode steps of several batch sizes and context lengths"},
  };
  check_fixed(o, unknowns);
  for (const char* name : {"compute_efficiency", "bandwidth_efficiency"}) {
    const auto it = o.fixed.find(name);
    if (it != o.fixed.end() && !(it->second >= 0.01 && it->second <= 1.0)) {
      throw Error(std::string("--fix ") + name + ": expected a number in [0.01, 1]");
    }
  }
  if (o.fixed.count("step_overhead_ms") && o.fixed.at("step_overhead_ms") < 0) {
    throw Error("--fix step_overhead_ms: expected a number >= 0");
  }
  if (!(t.dequant_gemm_factor >= 0.01 && t.dequant_gemm_factor <= 1.0)) {
    throw Error("the dequantizing-GEMM factor must be in [0.01, 1], got " +
                fmt("%g", t.dequant_gemm_factor));
  }
  if (!(t.moe_gemm_factor >= 0.01 && t.moe_gemm_factor <= 1.0)) {
    throw Error("the fused-MoE GEMM factor must be in [0.01, 1], got " +
                fmt("%g", t.moe_gemm_factor));
  }
  if (!(t.unoverlapped_fraction >= 0 && t.unoverlapped_fraction <= 1.0)) {
    throw Error("the unoverlapped fraction must be in [0, 1], got " +
                fmt("%g", t.unoverlapped_fraction));
  }
  if (!(t.kernel_floor_us >= 0 && t.kernel_floor_us <= 1000)) {
    throw Error("the kernel floor must be in [0, 1000] us, got " + fmt("%g", t.kernel_floor_us));
  }
  if (!(t.moe_routing_us >= 0 && t.moe_routing_us <= 10000)) {
    throw Error("the MoE routing time must be in [0, 10000] us, got " +
                fmt("%g", t.moe_routing_us));
  }
  if (!(t.elementwise_efficiency >= 0.01 && t.elementwise_efficiency <= 1.0)) {
    throw Error("the element-wise efficiency must be in [0.01, 1], got " +
                fmt("%g", t.elementwise_efficiency));
  }
  if (!(t.allreduce_bandwidth_gbs >= 0 && t.allreduce_bandwidth_gbs <= 1e6)) {
    throw Error("the all-reduce bandwidth must be in [0, 1e6] GB/s (0 = the GPU catalog's), got " +
                fmt("%g", t.allreduce_bandwidth_gbs));
  }
  // `held`: the constants the target gives and the fit keeps. `unit`: efficiency 1, no overhead,
  // no floor and a plain max(), so its compute_ms and memory_ms are the k = 1 times, linear in
  // the unknowns; `shape` gives the floor and the fraction the fit holds.
  RooflineConstants held;
  held.allreduce_path = allreduce_path_named(t.allreduce_path);
  held.allreduce_bandwidth_gbs = t.allreduce_bandwidth_gbs;
  held.dequant_gemm_factor = t.dequant_gemm_factor;
  held.moe_gemm_factor = t.moe_gemm_factor;
  held.unoverlapped_fraction = t.unoverlapped_fraction;
  held.kernel_floor_us = t.kernel_floor_us;
  held.moe_routing_us = t.moe_routing_us;
  held.expert_parallel = t.expert_parallel;
  held.elementwise_efficiency = t.elementwise_efficiency;
  RooflineConstants unit_constants = held;
  unit_constants.compute_efficiency = 1.0;
  unit_constants.bandwidth_efficiency = 1.0;
  unit_constants.step_overhead_ms = 0.0;
  unit_constants.unoverlapped_fraction = 0.0;
  unit_constants.kernel_floor_us = 0.0;
  unit_constants.moe_routing_us = 0.0;
  const RooflineCostModel unit(gpu, llm, t.tp, unit_constants, t.kv_dtype_bytes);
  const RooflineCostModel shape(gpu, llm, t.tp, held, t.kv_dtype_bytes);
  const double floor_ms = shape.kernel_floor_ms();
  const double alpha = shape.unoverlapped_fraction();
  const auto n = static_cast<Eigen::Index>(steps.size());
  Eigen::VectorXd compute(n), memory(n), y(n), w(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const StepSample& s = steps[static_cast<size_t>(i)];
    const auto b = unit.breakdown(s.batch);
    compute(i) = b.compute_ms;
    memory(i) = b.memory_ms;
    y(i) = s.step_ms - b.allreduce_ms - b.elementwise_ms;
    w(i) = 1.0 / s.step_ms;
  }

  std::map<std::string, double> fixed = o.fixed;
  auto fixed_or = [&](const std::string& name, double v) {
    const auto it = fixed.find(name);
    return it == fixed.end() ? v : it->second;
  };
  double overhead = fixed_or("step_overhead_ms", kDefaultStepOverheadMs);
  double kc = 1.0 / fixed_or("compute_efficiency", kDefaultComputeEfficiency);
  double km = 1.0 / fixed_or("bandwidth_efficiency", bandwidth_efficiency_for(gpu));
  double se_overhead = 0, se_kc = 0, se_km = 0;
  bool clamped = false;
  std::vector<char> regime(steps.size()), previous;  // 1 = compute-bound
  CalibrationResult r;
  r.form = "roofline";

  // Fits the free unknowns for the current regimes; returns false when the overhead came out
  // negative (the caller holds it at 0 and fits again).
  auto fit = [&]() {
    std::vector<size_t> free;
    for (size_t j = 0; j < unknowns.size(); ++j) {
      if (!fixed.count(unknowns[j].name)) free.push_back(j);
    }
    if (!free.empty() && steps.size() <= free.size()) {
      throw Error("cannot fit the roofline form: " + std::to_string(steps.size()) + " rows for " +
                  std::to_string(free.size()) + " parameters; time more steps");
    }
    // A step takes overhead + max(kc C, km M + floor) + alpha min(kc C, km M + floor): in a
    // known regime, linear in the three unknowns. A free efficiency that bounds no step is left
    // unidentified (its column 0), not fitted from the unoverlapped part alone: that part is
    // too small to pin it, and the error says which steps to time.
    const bool any_compute = std::count(regime.begin(), regime.end(), 1) > 0;
    const bool any_memory = std::count(regime.begin(), regime.end(), 0) > 0;
    const bool weak_compute = !any_compute && !fixed.count("compute_efficiency");
    const bool weak_memory = !any_memory && !fixed.count("bandwidth_efficiency");
    Eigen::MatrixXd x(n, 3);
    Eigen::VectorXd target = y;
    for (Eigen::Index i = 0; i < n; ++i) {
      const bool c = regime[static_cast<size_t>(i)] != 0;
      const double cw = c ? 1.0 : (weak_compute ? 0.0 : alpha);
      const double mw = c ? (weak_memory ? 0.0 : alpha) : 1.0;
      x.row(i) << 1.0, cw * compute(i), mw * memory(i);
      target(i) -= (c ? alpha : 1.0) * floor_ms;
    }
    const double values[3] = {overhead, kc, km};
    Eigen::MatrixXd xf(n, static_cast<Eigen::Index>(free.size()));
    for (size_t j = 0, k = 0; j < 3; ++j) {
      if (k < free.size() && free[k] == j) {
        xf.col(static_cast<Eigen::Index>(k++)) = x.col(static_cast<Eigen::Index>(j));
      } else {
        target -= x.col(static_cast<Eigen::Index>(j)) * values[j];
      }
    }
    const LeastSquares ls = weighted_least_squares(xf, target, w);
    if (!ls.ok()) unidentifiable("roofline", source, steps.size(), unknowns, free, ls);
    double* out[3] = {&overhead, &kc, &km};
    double* err[3] = {&se_overhead, &se_kc, &se_km};
    for (size_t k = 0; k < free.size(); ++k) {
      *out[free[k]] = ls.beta(static_cast<Eigen::Index>(k));
      *err[free[k]] = ls.std_error(static_cast<Eigen::Index>(k));
    }
    for (const auto& [name, k] :
         {std::pair<const char*, double>{"compute_efficiency", kc}, {"bandwidth_efficiency", km}}) {
      if (k <= 0) {
        throw Error(std::string("cannot fit the roofline form: the ") + name +
                    " term came out negative (1/efficiency = " + fmt("%.4g", k) +
                    "): the step times do not grow with this regime's work; check --gpu " + t.gpu +
                    ", --model " + t.model + " and --tp " + std::to_string(t.tp));
      }
    }
    if (!fixed.count("step_overhead_ms") && overhead < 0) return false;
    return true;
  };

  for (std::int32_t it = 1;; ++it) {
    for (size_t i = 0; i < steps.size(); ++i) {
      regime[i] = kc * compute(static_cast<Eigen::Index>(i)) >=
                          km * memory(static_cast<Eigen::Index>(i)) + floor_ms
                      ? 1
                      : 0;
    }
    if (regime == previous) break;
    if (it > o.max_iterations) {
      r.settled = false;
      r.notes.push_back("the compute/memory regimes did not settle after " +
                        std::to_string(o.max_iterations) +
                        " fits; the rows near the crossover keep switching");
      break;
    }
    previous = regime;
    r.iterations = it;
    if (!fit()) {
      fixed["step_overhead_ms"] = 0.0;
      overhead = 0.0;
      se_overhead = 0.0;
      clamped = true;
      fit();
    }
  }
  if (clamped) {
    r.notes.push_back(
        "the fitted step overhead came out negative; it is held at 0 (the spec's minimum)");
  }
  const double eta_c = 1.0 / kc, eta_m = 1.0 / km;
  for (const auto& [name, eta] : {std::pair<const char*, double>{"compute_efficiency", eta_c},
                                  {"bandwidth_efficiency", eta_m}}) {
    if (eta > 1.0 || eta < 0.01) {
      throw Error(std::string("the fitted ") + name + " is " + fmt("%.3g", eta) +
                  ", outside [0.01, 1]: the steps ran " + (eta > 1.0 ? "faster" : "slower") +
                  " than " + t.model + " on " + gpu.name + " x" + std::to_string(t.tp) +
                  " allows; check --gpu, --model, --tp and --kv-dtype-bytes");
    }
  }
  r.params = {
      {"compute_efficiency", eta_c, se_kc / (kc * kc), o.fixed.count("compute_efficiency") > 0,
       "of peak"},
      {"bandwidth_efficiency", eta_m, se_km / (km * km), o.fixed.count("bandwidth_efficiency") > 0,
       "of peak"},
      {"step_overhead_ms", overhead, se_overhead, fixed.count("step_overhead_ms") > 0, "ms"},
  };
  if (t.allreduce_bandwidth_gbs > 0) {
    r.settings.emplace_back("allreduce_bandwidth_gbs", t.allreduce_bandwidth_gbs);
  }
  if (unit.dequantizes_weights()) {
    r.settings.emplace_back("dequant_gemm_factor", t.dequant_gemm_factor);
  }
  if (unit.is_moe()) r.settings.emplace_back("moe_gemm_factor", t.moe_gemm_factor);
  r.settings.emplace_back("unoverlapped_fraction", t.unoverlapped_fraction);
  r.settings.emplace_back("kernel_floor_us", t.kernel_floor_us);
  if (unit.is_moe()) r.settings.emplace_back("moe_routing_us", t.moe_routing_us);
  r.settings.emplace_back("elementwise_efficiency", t.elementwise_efficiency);
  RooflineConstants fitted = held;
  fitted.compute_efficiency = eta_c;
  fitted.bandwidth_efficiency = eta_m;
  fitted.step_overhead_ms = overhead;
  const RooflineCostModel model(gpu, llm, t.tp, fitted, t.kv_dtype_bytes);
  std::vector<double> predicted;
  std::vector<std::string> group;
  for (size_t i = 0; i < steps.size(); ++i) {
    predicted.push_back(model.breakdown(steps[i].batch).total_ms);
    group.push_back(regime[i] ? "compute_bound" : "memory_bound");
  }
  r.quality = qualities(steps, predicted, group, {"compute_bound", "memory_bound"});
  return r;
}

}  // namespace

double CalibrationResult::param(const std::string& name) const {
  for (const auto& p : params) {
    if (p.name == name) return p.value;
  }
  throw InternalError("calibration result has no parameter '" + name + "'");
}

CalibrationResult calibrate(const std::vector<StepSample>& steps, const CalibrationOptions& options,
                            const std::string& source) {
  if (options.form != "fitted" && options.form != "roofline") {
    throw UnknownNameError("calibration form", options.form, {"fitted", "roofline"});
  }
  if (steps.empty()) throw Error("cannot calibrate: no measured steps");
  for (const auto& s : steps) {
    if (!(s.step_ms > 0) || !std::isfinite(s.step_ms) || s.batch.empty()) {
      throw Error("cannot calibrate: a step (line " + std::to_string(s.line) +
                  ") has no batch or a duration that is not > 0");
    }
  }
  if (options.target.tp < 1) {
    throw Error("tensor parallel size must be >= 1, got " + std::to_string(options.target.tp));
  }
  if (options.target.kv_dtype_bytes < 1 || options.target.kv_dtype_bytes > 4) {
    throw Error("KV dtype bytes must be in [1, 4], got " +
                std::to_string(options.target.kv_dtype_bytes));
  }
  if (!options.target.gpu.empty()) find_gpu(options.target.gpu);
  if (!options.target.model.empty()) find_model(options.target.model);
  CalibrationResult r = options.form == "fitted" ? fit_fitted(steps, options, source)
                                                 : fit_roofline(steps, options, source);
  r.source = source;
  r.target = options.target;
  r.has_target = !options.target.gpu.empty() || !options.target.model.empty();
  for (const auto& s : steps) {
    if (s.origin == "ttft" || s.origin == "tpot") r.layout = "requests";
  }
  if (r.layout.empty()) r.layout = "steps";
  // What a scenario would refuse to load must not be written: the same bounds as the spec's.
  for (const auto& def : cost_model_spec().defs()) {
    for (const auto& p : r.params) {
      if (p.name != def.name || (p.value >= def.min && p.value <= def.max)) continue;
      throw Error("cannot calibrate from " + source + ": the fit gives " + p.name + " = " +
                  fmt("%.4g", p.value) + ", outside [" + fmt("%g", def.min) + ", " +
                  fmt("%g", def.max) +
                  "] where a scenario accepts it; check the measurements' units (ms) and rows, "
                  "or --fix " +
                  p.name);
    }
  }
  for (const auto& p : r.params) {
    if (p.fixed || p.value == 0) continue;
    if (p.std_error > 0.5 * std::fabs(p.value)) {
      r.notes.push_back(p.name + " is poorly determined (standard error " +
                        fmt("%.2g", p.std_error) + " for " + fmt("%.4g", p.value) +
                        "): the rows barely constrain it; time more varied steps or --fix it");
    }
  }
  return r;
}

}  // namespace fleetsim
