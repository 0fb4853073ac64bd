#include "sim/distribution.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>

#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// The default min/max: no clamp.
constexpr double kNoClamp = 1e18;

// Bounds shared by every kind: draws are clamped to [min, max].
ParamSpec with_bounds(ParamSpec spec) {
  return spec.real("min", -kNoClamp, "lower clamp of a draw")
      .real("max", kNoClamp, "upper clamp of a draw");
}

class Bounded : public Distribution {
 public:
  // The defaults become infinite so that support() tells "no clamp" from a given one.
  Bounded(double lo, double hi)
      : lo_(lo <= -kNoClamp ? -kInf : lo), hi_(hi >= kNoClamp ? kInf : hi) {}
  double clamp(double x) const { return std::clamp(x, lo_, hi_); }
  // The support of the unclamped draws [a, b], clamped.
  Support clamped(double a, double b) const { return {clamp(a), clamp(b)}; }

 private:
  double lo_, hi_;
};

// Numbers in messages as written ("10000000", "-5", "0.5", "1e+12"), not to_string's "-5.000000".
std::string number(double x) {
  std::ostringstream os;
  os << std::setprecision(15) << x;
  return os.str();
}

class Constant : public Distribution {
 public:
  explicit Constant(double v) : v_(v) {}
  double sample(Rng&) const override { return v_; }
  double mean() const override { return v_; }
  std::string describe() const override { return "constant(" + std::to_string(v_) + ")"; }
  Support support() const override { return {v_, v_}; }

 private:
  double v_;
};

class Uniform : public Bounded {
 public:
  explicit Uniform(const Params& p)
      : Bounded(p.get_double("min"), p.get_double("max")),
        low_(p.get_double("low")),
        high_(p.get_double("high")) {}
  double sample(Rng& rng) const override {
    return clamp(std::uniform_real_distribution<double>(low_, high_)(rng));
  }
  double mean() const override { return (low_ + high_) / 2; }
  std::string describe() const override {
    return "uniform(" + std::to_string(low_) + ", " + std::to_string(high_) + ")";
  }
  Support support() const override { return clamped(low_, high_); }

 private:
  double low_, high_;
};

class Normal : public Bounded {
 public:
  explicit Normal(const Params& p)
      : Bounded(p.get_double("min"), p.get_double("max")),
        mean_(p.get_double("mean")),
        std_(p.get_double("std")) {}
  // A standard normal scaled by hand: the same draws as normal_distribution(mean, std), which
  // requires std > 0 (libstdc++ asserts it) while std 0 is allowed here.
  double sample(Rng& rng) const override {
    return clamp(std::normal_distribution<double>(0.0, 1.0)(rng) * std_ + mean_);
  }
  double mean() const override { return mean_; }
  std::string describe() const override {
    return "normal(" + std::to_string(mean_) + ", " + std::to_string(std_) + ")";
  }
  Support support() const override {
    return clamped(std_ > 0 ? -kInf : mean_, std_ > 0 ? kInf : mean_);
  }

 private:
  double mean_, std_;
};

// Parameterised by the mean and standard deviation of the variable itself (what users know),
// converted to the underlying normal's mu and sigma.
class LogNormal : public Bounded {
 public:
  explicit LogNormal(const Params& p)
      : Bounded(p.get_double("min"), p.get_double("max")), mean_(p.get_double("mean")) {
    const double s = p.get_double("std");
    const double var = std::log1p((s * s) / (mean_ * mean_));
    sigma_ = std::sqrt(var);
    mu_ = std::log(mean_) - var / 2;
  }
  double sample(Rng& rng) const override {
    return clamp(std::lognormal_distribution<double>(mu_, sigma_)(rng));
  }
  double mean() const override { return mean_; }
  std::string describe() const override { return "lognormal(mean " + std::to_string(mean_) + ")"; }
  Support support() const override { return clamped(0, kInf); }

 private:
  double mean_, mu_ = 0, sigma_ = 0;
};

class Exponential : public Bounded {
 public:
  explicit Exponential(const Params& p)
      : Bounded(p.get_double("min"), p.get_double("max")), mean_(p.get_double("mean")) {}
  double sample(Rng& rng) const override {
    return clamp(std::exponential_distribution<double>(1.0 / mean_)(rng));
  }
  double mean() const override { return mean_; }
  std::string describe() const override {
    return "exponential(mean " + std::to_string(mean_) + ")";
  }
  Support support() const override { return clamped(0, kInf); }

 private:
  double mean_;
};

// Draws one value of a column of a CSV file (with a header row), each row equally likely: a
// bootstrap of measured lengths such as the ShareGPT or arXiv token counts in shared/data/lengths.
class Empirical : public Bounded {
 public:
  Empirical(const Params& p, const YAML::Node& node, const YamlWhere& where)
      : Bounded(p.get_double("min"), p.get_double("max")) {
    const std::string& file = p.get_string("file");
    column_ = p.get_string("column");
    const YamlWhere fw = where.child("file");
    if (file.empty()) throw ScenarioError(fw.at(node) + ": missing; expected a CSV file path");
    path_ = input_file_path(file, fw, node["file"], "CSV file",
                            "expected a CSV file with a header row (docs/workloads.md)");
    load(node, where);
    mean_ = 0;
    for (double v : values_) mean_ += clamp(v);
    mean_ /= static_cast<double>(values_.size());
  }
  double sample(Rng& rng) const override {
    std::uniform_int_distribution<std::size_t> pick(0, values_.size() - 1);
    return clamp(values_[pick(rng)]);
  }
  double mean() const override { return mean_; }
  std::string describe() const override {
    return "empirical(" + path_ + ", " + column_ + ", " + std::to_string(values_.size()) +
           " values)";
  }
  Support support() const override {
    const auto [lo, hi] = std::minmax_element(values_.begin(), values_.end());
    return clamped(*lo, *hi);
  }

 private:
  static std::vector<std::string> split(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) {
      const auto b = cell.find_first_not_of(" \t\r\"");
      const auto e = cell.find_last_not_of(" \t\r\"");
      out.push_back(b == std::string::npos ? std::string() : cell.substr(b, e - b + 1));
    }
    if (!line.empty() && line.back() == ',') out.emplace_back();
    return out;
  }

  void load(const YAML::Node& node, const YamlWhere& where) {
    if (auto problem = input_file_problem(path_, max_input_bytes())) {
      throw ScenarioError(where.child("file").at(node["file"]) + ": " + path_ + ": " + *problem);
    }
    std::ifstream in(path_);
    if (!in) throw ScenarioError(where.child("file").at(node["file"]) + ": cannot read " + path_);
    std::string line;
    if (!std::getline(in, line)) {
      throw ScenarioError(where.child("file").at(node["file"]) + ": " + path_ +
                          ": empty file (expected a header row)");
    }
    const std::vector<std::string> header = split(line);
    const auto it = std::find(header.begin(), header.end(), column_);
    if (it == header.end()) {
      throw ScenarioError(where.child("column").at(node["column"]) + ": " + path_ +
                          ":1: no column '" + column_ + "'; columns: " + join(header, ", "));
    }
    const auto col = static_cast<std::size_t>(it - header.begin());
    for (int line_no = 2; std::getline(in, line); ++line_no) {
      if (line.empty() || line == "\r") continue;
      const std::vector<std::string> cells = split(line);
      double v = 0;
      const std::string cell = col < cells.size() ? cells[col] : std::string();
      const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() ||
          !std::isfinite(v)) {
        throw ScenarioError(path_ + ":" + std::to_string(line_no) + ": " + column_ +
                            ": expected a number, got '" + cell + "' (" +
                            where.child("file").at(node["file"]) + ")");
      }
      values_.push_back(v);
    }
    if (values_.empty()) {
      throw ScenarioError(where.child("file").at(node["file"]) + ": " + path_ +
                          ": no data rows under the header");
    }
  }

  std::string path_;
  std::string column_;
  std::vector<double> values_;
  double mean_ = 0;
};

struct Kind {
  ParamSpec spec;
  std::function<std::shared_ptr<Distribution>(const Params&)> make;
  // Kinds that read a file need the YAML node and its place for their error messages.
  std::function<std::shared_ptr<Distribution>(const Params&, const YAML::Node&, const YamlWhere&)>
      make_at = nullptr;
};

// Parameters that are each valid but not together; std::clamp and uniform_real_distribution
// have undefined behaviour on them.
void check_params(const std::string& kind, const Params& p, const YAML::Node& node,
                  const YamlWhere& where) {
  if (p.values().count("min") && p.get_double("min") > p.get_double("max")) {
    throw ScenarioError(where.at(node) + ": min " + number(p.get_double("min")) + " is above max " +
                        number(p.get_double("max")) + "; expected min <= max");
  }
  if (kind == "uniform") {
    const double low = p.get_double("low");
    const double high = p.get_double("high");
    if (low > high) {
      throw ScenarioError(where.at(node) + ": uniform low " + number(low) + " is above high " +
                          number(high) + "; expected low <= high");
    }
    if (!std::isfinite(high - low)) {
      throw ScenarioError(where.at(node) + ": uniform [" + number(low) + ", " + number(high) +
                          "] is wider than a double can hold; expected a finite high - low");
    }
  }
}

const std::map<std::string, Kind>& kinds() {
  static const std::map<std::string, Kind> kKinds = {
      {"constant",
       {ParamSpec().real("value", 0, "the value every draw returns"),
        [](const Params& p) { return std::make_shared<Constant>(p.get_double("value")); }}},
      {"uniform",
       {with_bounds(ParamSpec()
                        .real("low", 0, "lower end of the interval")
                        .real("high", 1, "upper end of the interval")),
        [](const Params& p) { return std::make_shared<Uniform>(p); }}},
      {"normal",
       {with_bounds(ParamSpec().real("mean", 0, "mean").real("std", 1, "standard deviation", 0)),
        [](const Params& p) { return std::make_shared<Normal>(p); }}},
      {"lognormal",
       {with_bounds(ParamSpec()
                        .real("mean", 1, "mean of the variable (not of its log)", 1e-12)
                        .real("std", 1, "standard deviation of the variable", 0)),
        [](const Params& p) { return std::make_shared<LogNormal>(p); }}},
      {"exponential",
       {with_bounds(ParamSpec().real("mean", 1, "mean", 1e-12)),
        [](const Params& p) { return std::make_shared<Exponential>(p); }}},
      {"empirical",
       {with_bounds(ParamSpec()
                        .text("file", "",
                              "CSV file with a header row; a relative path resolves against the "
                              "scenario file's folder, then the data folder "
                              "($FLEETSIM_DATA_DIR); given with --set, the current directory")
                        .text("column", "num_prefill_tokens",
                              "header name of the column whose values are drawn")),
        nullptr,
        [](const Params& p, const YAML::Node& node, const YamlWhere& where) {
          return std::make_shared<Empirical>(p, node, where);
        }}},
  };
  return kKinds;
}

}  // namespace

std::vector<std::string> distribution_names() {
  std::vector<std::string> names;
  for (const auto& [name, kind] : kinds()) names.push_back(name);
  return names;
}

std::shared_ptr<const Distribution> constant_distribution(double value) {
  return std::make_shared<Constant>(value);
}

std::shared_ptr<const Distribution> parse_distribution(const YAML::Node& node,
                                                       const YamlWhere& where) {
  if (!node.IsDefined() || node.IsNull()) {
    throw ScenarioError(where.at(node) + ": missing; expected a number or {dist: " +
                        join(distribution_names(), "|") + ", ...}");
  }
  if (node.IsScalar()) {
    double v = 0;
    if (!YAML::convert<double>::decode(node, v) || !std::isfinite(v)) {
      throw ScenarioError(where.at(node) + ": expected a number or {dist: " +
                          join(distribution_names(), "|") + ", ...}, got '" + node.Scalar() + "'");
    }
    auto d = std::make_shared<Constant>(v);
    d->where_ = where.at(node);
    return d;
  }
  if (!node.IsMap()) throw ScenarioError(where.at(node) + ": expected a number or a map");
  const YAML::Node kind_node = node["dist"];
  if (!kind_node.IsDefined() || !kind_node.IsScalar()) {
    throw ScenarioError(where.at(node) +
                        ": missing field 'dist'; valid kinds: " + join(distribution_names(), ", "));
  }
  const std::string& kind = kind_node.Scalar();
  auto it = kinds().find(kind);
  if (it == kinds().end()) {
    throw ScenarioError(where.child("dist").at(kind_node) + ": unknown distribution '" + kind +
                        "'; valid kinds: " + join(distribution_names(), ", "));
  }
  ParamSpec spec = it->second.spec;
  spec.text("dist", kind, "distribution kind", distribution_names());
  const Params params = spec.resolve(node, where);
  check_params(kind, params, node, where);
  std::shared_ptr<Distribution> d =
      it->second.make_at ? it->second.make_at(params, node, where) : it->second.make(params);
  d->where_ = where.at(node);
  return d;
}

void require_range(const Distribution& d, const std::string& field, double lo, double hi,
                   const std::string& what) {
  const Support s = d.support();
  const double m = d.mean();
  std::string problem;
  if (s.hi < lo || s.lo > hi) {
    problem = s.lo == s.hi
                  ? number(s.lo) + " is out of range"
                  : "every draw lies in [" + number(s.lo) + ", " + number(s.hi) + "], out of range";
  } else if (std::isfinite(s.hi) && s.hi > hi) {
    problem = "draws reach " + number(s.hi) + ", above the maximum";
  } else if (m < lo || m > hi) {
    problem = "the mean " + number(m) + " is out of range";
  } else {
    return;
  }
  throw ScenarioError((d.where().empty() ? field : d.where()) + ": " + problem + "; expected " +
                      what + " in [" + number(lo) + ", " + number(hi) + "]");
}

void require_tokens(const Distribution& d, const std::string& field, std::int32_t min_tokens) {
  require_range(d, field, min_tokens, kMaxTokens,
                "tokens (at most 10M per segment, beyond any model's context window)");
}

std::int32_t sample_int(const Distribution& d, Rng& rng, std::int32_t lo, std::int32_t hi) {
  const double x = std::round(d.sample(rng));
  // Written so that a NaN draw lands on lo.
  if (!(x > lo)) return lo;
  return x < hi ? static_cast<std::int32_t>(x) : hi;
}

std::int32_t sample_tokens(const Distribution& d, Rng& rng, std::int32_t min_value) {
  return sample_int(d, rng, min_value, static_cast<std::int32_t>(kMaxTokens));
}

}  // namespace fleetsim
