#include "sim/distribution.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "sim/errors.h"

namespace fleetsim {
namespace {

// Bounds shared by every kind: draws are clamped to [min, max].
ParamSpec with_bounds(ParamSpec spec) {
  return spec.real("min", -1e18, "lower clamp of a draw")
      .real("max", 1e18, "upper clamp of a draw");
}

class Bounded : public Distribution {
 public:
  Bounded(double lo, double hi) : lo_(lo), hi_(hi) {}
  double clamp(double x) const { return std::clamp(x, lo_, hi_); }

 private:
  double lo_, hi_;
};

class Constant : public Distribution {
 public:
  explicit Constant(double v) : v_(v) {}
  double sample(Rng&) const override { return v_; }
  double mean() const override { return v_; }
  std::string describe() const override { return "constant(" + std::to_string(v_) + ")"; }

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

 private:
  double low_, high_;
};

class Normal : public Bounded {
 public:
  explicit Normal(const Params& p)
      : Bounded(p.get_double("min"), p.get_double("max")),
        mean_(p.get_double("mean")),
        std_(p.get_double("std")) {}
  double sample(Rng& rng) const override {
    return clamp(std::normal_distribution<double>(mean_, std_)(rng));
  }
  double mean() const override { return mean_; }
  std::string describe() const override {
    return "normal(" + std::to_string(mean_) + ", " + std::to_string(std_) + ")";
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
    path_ = resolve(file);
    if (path_.empty()) {
      const char* dir = std::getenv("FLEETSIM_DATA_DIR");
      throw ScenarioError(fw.at(node["file"]) + ": cannot open the CSV file '" + file +
                          "' (looked in the current directory" +
                          (dir ? std::string(" and FLEETSIM_DATA_DIR=") + dir
                               : std::string("; FLEETSIM_DATA_DIR is not set")) +
                          ")");
    }
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

 private:
  // Relative paths: the current directory first, then $FLEETSIM_DATA_DIR (the scenario file's
  // own directory is not known down here). Empty when neither holds the file.
  static std::string resolve(const std::string& file) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return file;
    if (fs::path(file).is_absolute()) return {};
    if (const char* dir = std::getenv("FLEETSIM_DATA_DIR"); dir && *dir) {
      const fs::path p = fs::path(dir) / file;
      if (fs::is_regular_file(p, ec)) return p.string();
    }
    return {};
  }

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
  std::function<std::shared_ptr<const Distribution>(const Params&)> make;
  // Kinds that read a file need the YAML node and its place for their error messages.
  std::function<std::shared_ptr<const Distribution>(const Params&, const YAML::Node&,
                                                    const YamlWhere&)>
      make_at = nullptr;
};

const std::map<std::string, Kind>& kinds() {
  static const std::map<std::string, Kind> k = {
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
                              "CSV file with a header row; a relative path is looked up in the "
                              "current directory, then in $FLEETSIM_DATA_DIR")
                        .text("column", "num_prefill_tokens",
                              "header name of the column whose values are drawn")),
        nullptr,
        [](const Params& p, const YAML::Node& node, const YamlWhere& where) {
          return std::make_shared<Empirical>(p, node, where);
        }}},
  };
  return k;
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
    return constant_distribution(v);
  }
  if (!node.IsMap()) throw ScenarioError(where.at(node) + ": expected a number or a map");
  const YAML::Node kind_node = node["dist"];
  if (!kind_node.IsDefined() || !kind_node.IsScalar()) {
    throw ScenarioError(where.at(node) +
                        ": missing field 'dist'; valid kinds: " + join(distribution_names(), ", "));
  }
  const std::string kind = kind_node.Scalar();
  auto it = kinds().find(kind);
  if (it == kinds().end()) {
    throw ScenarioError(where.child("dist").at(kind_node) + ": unknown distribution '" + kind +
                        "'; valid kinds: " + join(distribution_names(), ", "));
  }
  ParamSpec spec = it->second.spec;
  spec.text("dist", kind, "distribution kind", distribution_names());
  const Params params = spec.resolve(node, where);
  if (it->second.make_at) return it->second.make_at(params, node, where);
  return it->second.make(params);
}

std::int32_t sample_tokens(const Distribution& d, Rng& rng, std::int32_t min_value) {
  const double x = std::round(d.sample(rng));
  return std::max(min_value, static_cast<std::int32_t>(std::min(x, 1e9)));
}

}  // namespace fleetsim
