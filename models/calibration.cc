#include "models/calibration.h"

#include <yaml-cpp/yaml.h>

#include <Eigen/Dense>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

// ---------------------------------------------------------------------------------------------
// Reading the measurements.

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// One CSV line into cells (RFC 4180: a double-quoted cell may hold commas, "" is a quote).
std::vector<std::string> split_csv(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  if (quoted) throw std::invalid_argument("a double quote is not closed");
  for (auto& c : cells) c = std::string(trim(c));
  return cells;
}

bool parse_double(std::string_view s, double& v) {
  s = trim(s);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);
}

// An integer cell; "2048.0" is accepted (pandas writes integer columns with gaps as floats).
bool parse_integer(std::string_view s, std::int64_t& v) {
  double d = 0;
  if (!parse_double(s, d) || std::floor(d) != d || std::fabs(d) > 2e9) return false;
  v = static_cast<std::int64_t>(d);
  return true;
}

class CsvRow {
 public:
  CsvRow(const std::string& label, std::int64_t line, const std::vector<std::string>& header,
         std::vector<std::string> cells)
      : label_(label), line_(line), header_(header), cells_(std::move(cells)) {}

  bool has(const std::string& column) const { return index(column) >= 0; }
  const std::string& cell(const std::string& column) const {
    return cells_[static_cast<size_t>(index(column))];
  }
  bool empty(const std::string& column) const { return !has(column) || cell(column).empty(); }

  [[noreturn]] void fail(const std::string& column, const std::string& expected) const {
    throw TraceError(label_ + ":" + std::to_string(line_) + ": column '" + column + "': expected " +
                     expected + ", got '" + (has(column) ? cell(column) : "") + "'");
  }
  double positive(const std::string& column, const std::string& what) const {
    double v = 0;
    if (!parse_double(cell(column), v) || v <= 0) fail(column, what);
    return v;
  }
  std::int64_t integer(const std::string& column, std::int64_t min, const std::string& what) const {
    std::int64_t v = 0;
    if (!parse_integer(cell(column), v) || v < min) fail(column, what);
    return v;
  }
  std::int64_t line() const { return line_; }
  const std::string& label() const { return label_; }

 private:
  int index(const std::string& column) const {
    for (size_t i = 0; i < header_.size(); ++i) {
      if (header_[i] == column) return static_cast<int>(i);
    }
    return -1;
  }
  const std::string& label_;
  std::int64_t line_;
  const std::vector<std::string>& header_;
  std::vector<std::string> cells_;
};

const std::vector<std::string> kStepColumns = {"step_ms", "batch"};
const std::vector<std::string> kRequestColumns = {"ttft_ms", "prompt_tokens", "cached_tokens",
                                                  "tpot_ms", "output_tokens"};

std::string layout_help() {
  return "expected a header with step_ms,batch (one row per engine step) or prompt_tokens with "
         "ttft_ms and/or tpot_ms,output_tokens (one row per request timed alone; cached_tokens "
         "optional); see docs/calibration.md";
}

void read_step_row(const CsvRow& row, Measurements& m) {
  StepSample s;
  s.line = row.line();
  s.origin = "step";
  s.step_ms = row.positive("step_ms", "a step duration in ms, a number > 0");
  try {
    s.batch = parse_batch(row.cell("batch"));
  } catch (const std::invalid_argument& e) {
    throw TraceError(row.label() + ":" + std::to_string(row.line()) +
                     ": column 'batch': " + e.what() + ", got '" + row.cell("batch") + "'");
  }
  m.steps.push_back(std::move(s));
}

void read_request_row(const CsvRow& row, Measurements& m) {
  const std::int64_t prompt =
      row.integer("prompt_tokens", 1, "the prompt length in tokens, an integer >= 1");
  std::int64_t cached = 0;
  if (!row.empty("cached_tokens")) {
    cached = row.integer("cached_tokens", 0,
                         "prefix-cache hits in tokens, an integer in [0, prompt_tokens - 1]");
    if (cached >= prompt) {
      row.fail("cached_tokens",
               "an integer in [0, prompt_tokens - 1] = [0, " + std::to_string(prompt - 1) + "]");
    }
  }
  const bool ttft = !row.empty("ttft_ms");
  const bool tpot = !row.empty("tpot_ms");
  if (!ttft && !tpot) {
    row.fail(row.has("ttft_ms") ? "ttft_ms" : "tpot_ms",
             "a time in ms (a row needs ttft_ms or tpot_ms)");
  }
  if (ttft) {
    // The prompt's uncached tokens in one prefill step on top of the cached ones.
    StepSample s;
    s.line = row.line();
    s.origin = "ttft";
    s.step_ms = row.positive("ttft_ms", "the time to first token in ms, a number > 0");
    s.batch = {{static_cast<std::int32_t>(prompt - cached), static_cast<std::int32_t>(cached)}};
    m.steps.push_back(std::move(s));
  }
  if (tpot) {
    // TPOT = (e2e - ttft) / (output - 1): the mean of the output - 1 decode steps, the k-th
    // (k = 1 .. output - 1) reading prompt + k - 1 context tokens. Both forms are linear in the
    // context of a lone decode, so the mean step is the step at the mean context.
    if (!row.has("output_tokens") || row.empty("output_tokens")) {
      row.fail("output_tokens", "the output length in tokens next to tpot_ms, an integer >= 2");
    }
    const std::int64_t output =
        row.integer("output_tokens", 2, "the output length in tokens, an integer >= 2");
    StepSample s;
    s.line = row.line();
    s.origin = "tpot";
    s.step_ms = row.positive("tpot_ms", "the time per output token in ms, a number > 0");
    const double context = static_cast<double>(prompt) + static_cast<double>(output - 2) / 2.0;
    s.batch = {{1, static_cast<std::int32_t>(std::llround(context))}};
    m.steps.push_back(std::move(s));
  }
}

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

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
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
  // Efficiency 1 and no overhead: compute_ms and memory_ms are the k = 1 times.
  if (!(t.dequant_gemm_factor >= 0.01 && t.dequant_gemm_factor <= 1.0)) {
    throw Error("the dequantizing-GEMM factor must be in [0.01, 1], got " +
                fmt("%g", t.dequant_gemm_factor));
  }
  const RooflineCostModel unit(gpu, llm, t.tp, 1.0, 1.0, 0.0, t.allreduce_bandwidth_gbs,
                               t.kv_dtype_bytes, t.dequant_gemm_factor);
  const auto n = static_cast<Eigen::Index>(steps.size());
  Eigen::VectorXd compute(n), memory(n), y(n), w(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const StepSample& s = steps[static_cast<size_t>(i)];
    const auto b = unit.breakdown(s.batch);
    compute(i) = b.compute_ms;
    memory(i) = b.memory_ms;
    y(i) = s.step_ms - b.allreduce_ms;
    w(i) = 1.0 / s.step_ms;
  }

  std::map<std::string, double> fixed = o.fixed;
  auto fixed_or = [&](const std::string& name, double v) {
    const auto it = fixed.find(name);
    return it == fixed.end() ? v : it->second;
  };
  double overhead = fixed_or("step_overhead_ms", kDefaultStepOverheadMs);
  double kc = 1.0 / fixed_or("compute_efficiency", kDefaultComputeEfficiency);
  double km = 1.0 / fixed_or("bandwidth_efficiency", kDefaultBandwidthEfficiency);
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
    Eigen::MatrixXd x(n, 3);
    for (Eigen::Index i = 0; i < n; ++i) {
      const bool c = regime[static_cast<size_t>(i)] != 0;
      x.row(i) << 1.0, c ? compute(i) : 0.0, c ? 0.0 : memory(i);
    }
    const double values[3] = {overhead, kc, km};
    Eigen::VectorXd target = y;
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
      regime[i] =
          kc * compute(static_cast<Eigen::Index>(i)) >= km * memory(static_cast<Eigen::Index>(i))
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
  const RooflineCostModel model(gpu, llm, t.tp, eta_c, eta_m, overhead, t.allreduce_bandwidth_gbs,
                                t.kv_dtype_bytes, t.dequant_gemm_factor);
  std::vector<double> predicted;
  std::vector<std::string> group;
  for (size_t i = 0; i < steps.size(); ++i) {
    predicted.push_back(model.breakdown(steps[i].batch).total_ms);
    group.push_back(regime[i] ? "compute_bound" : "memory_bound");
  }
  r.quality = qualities(steps, predicted, group, {"compute_bound", "memory_bound"});
  return r;
}

std::string yaml_quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string num(double v) { return fmt("%.6g", v); }

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<BatchEntry> parse_batch(std::string_view text) {
  std::vector<BatchEntry> batch;
  std::string token;
  auto flush = [&]() {
    if (token.empty()) return;
    std::string_view e = token;
    std::int64_t count = 1, new_tokens = 0, context = 0;
    const auto x = e.find('x');
    if (x != std::string_view::npos) {
      if (!parse_integer(e.substr(0, x), count) || count < 1 || count > 100000) {
        throw std::invalid_argument("entry '" + token +
                                    "': expected COUNTxNEW:CTX with COUNT an integer in "
                                    "[1, 100000]");
      }
      e.remove_prefix(x + 1);
    }
    const auto colon = e.find(':');
    if (!parse_integer(e.substr(0, colon), new_tokens) || new_tokens < 1) {
      throw std::invalid_argument("entry '" + token +
                                  "': expected NEW[:CTX] with NEW the tokens computed this "
                                  "step, an integer >= 1");
    }
    if (colon != std::string_view::npos &&
        (!parse_integer(e.substr(colon + 1), context) || context < 0)) {
      throw std::invalid_argument("entry '" + token +
                                  "': expected NEW:CTX with CTX the tokens already in the KV "
                                  "cache, an integer >= 0");
    }
    for (std::int64_t i = 0; i < count; ++i) {
      batch.push_back({static_cast<std::int32_t>(new_tokens), static_cast<std::int32_t>(context)});
    }
    token.clear();
  };
  for (const char c : text) {
    if (c == ';' || c == ' ' || c == '\t') {
      flush();
    } else {
      token += c;
    }
  }
  flush();
  if (batch.empty()) {
    throw std::invalid_argument(
        "expected the step's batch as entries NEW:CTX separated by ';' (e.g. 512:0;1:300)");
  }
  return batch;
}

Measurements parse_measurements(const std::string& text, const std::string& label) {
  Measurements m;
  m.path = label;
  std::istringstream in(text);
  std::string line;
  std::int64_t line_no = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    std::vector<std::string> cells;
    try {
      cells = split_csv(line);
    } catch (const std::invalid_argument& e) {
      throw TraceError(label + ":" + std::to_string(line_no) + ": " + e.what());
    }
    if (header.empty()) {
      header = cells;
      const auto has = [&](const char* c) {
        return std::find(header.begin(), header.end(), c) != header.end();
      };
      if (has("step_ms")) {
        m.layout = "steps";
        if (!has("batch")) {
          throw TraceError(label + ":" + std::to_string(line_no) +
                           ": missing column 'batch' next to step_ms (the step's entries "
                           "NEW:CTX; see docs/calibration.md)");
        }
      } else if (has("prompt_tokens") && (has("ttft_ms") || has("tpot_ms"))) {
        m.layout = "requests";
        if (has("tpot_ms") && !has("output_tokens")) {
          throw TraceError(label + ":" + std::to_string(line_no) +
                           ": missing column 'output_tokens' next to tpot_ms (the output "
                           "length, which fixes the decode context)");
        }
      } else {
        std::vector<std::string> missing;
        for (const char* c : {"step_ms", "batch"}) {
          if (!has(c)) missing.push_back(c);
        }
        throw TraceError(label + ":" + std::to_string(line_no) + ": missing column(s) " +
                         join(missing, ", ") + ": " + layout_help() + "; got " + join(header, ","));
      }
      const auto& used = m.layout == "steps" ? kStepColumns : kRequestColumns;
      for (const auto& c : header) {
        if (std::find(used.begin(), used.end(), c) == used.end()) m.ignored_columns.push_back(c);
      }
      continue;
    }
    if (cells.size() != header.size()) {
      throw TraceError(label + ":" + std::to_string(line_no) + ": expected " +
                       std::to_string(header.size()) + " cells (the header's columns " +
                       join(header, ",") + "), got " + std::to_string(cells.size()));
    }
    const CsvRow row(label, line_no, header, std::move(cells));
    if (m.layout == "steps") {
      read_step_row(row, m);
    } else {
      read_request_row(row, m);
    }
  }
  if (header.empty()) throw TraceError(label + ": empty measurements file: " + layout_help());
  if (m.steps.empty()) throw TraceError(label + ": no measurements below the header");
  return m;
}

Measurements read_measurements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open the measurements file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_measurements(buf.str(), path);
}

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
  os << "fit:\n"
     << "  form: " << r.form << "\n"
     << "  source: " << yaml_quote(r.source) << "\n"
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
                   {"dequant_gemm_factor", r.target.dequant_gemm_factor}};
  }
  nlohmann::json cost_model = {{"type", r.form}};
  nlohmann::json params = nlohmann::json::object();
  for (const auto& p : r.params) {
    cost_model[p.name] = p.value;
    params[p.name] = {
        {"value", p.value}, {"std_error", p.std_error}, {"fixed", p.fixed}, {"unit", p.unit}};
  }
  for (const auto& [name, value] : r.settings) cost_model[name] = value;
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
  if (r.form == "roofline") j["iterations"] = r.iterations;
  j["notes"] = r.notes;
  return j;
}

CalibrationFile read_calibration_file(const std::string& path) {
  return read_calibration_file(path, cost_model_spec().defaults());
}

CalibrationFile read_calibration_file(const std::string& path, const Params& base) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ScenarioError(path + ": cannot open the calibration file");
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  const YamlWhere w{path, ""};
  if (!root.IsMap()) {
    throw ScenarioError(path +
                        ": expected a calibration file (a map with cost_model and fit), "
                        "as `fleetsim calibrate --out` writes");
  }
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>();
    if (key != "cost_model" && key != "fit") {
      throw ScenarioError(w.child(key).at(kv.first) +
                          ": unknown field; valid fields: cost_model, fit");
    }
  }
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
    if (const YAML::Node tp = fit["tensor_parallel_size"]; tp.IsDefined() && !tp.IsNull()) {
      int v = 0;
      if (!tp.IsScalar() || !YAML::convert<int>::decode(tp, v) || v < 1) {
        throw ScenarioError(w.child("fit").child("tensor_parallel_size").at(tp) +
                            ": expected an integer >= 1");
      }
      f.tp = v;
    }
  }
  return f;
}

}  // namespace fleetsim
