#include "sim/fleet/slo.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

SloTargets targets_of(const Params& p) {
  return {p.get_double("ttft_ms"), p.get_double("tpot_ms"), p.get_double("e2e_ms")};
}

// vLLM bench serve's percentiles and figures (--metric-percentiles, --percentile-metrics).
constexpr std::array<int, 4> kPercentiles = {50, 90, 95, 99};
constexpr std::array<const char*, 3> kFigures = {"ttft", "tpot", "e2el"};

std::string figure_name(const std::string& figure) {
  if (figure == "e2el") return "end-to-end latency";
  return figure == "ttft" ? "TTFT" : "TPOT";
}

std::string percentile_key(int p, const char* figure) {
  return "p" + std::to_string(p) + "_" + figure + "_ms";
}

bool is_percentile_key(const std::string& key) {
  for (const char* figure : kFigures) {
    for (int q : kPercentiles) {
      if (key == percentile_key(q, figure)) return true;
    }
  }
  return false;
}

std::vector<PercentileTarget> percentile_targets_of(const Params& p) {
  std::vector<PercentileTarget> out;
  for (const char* figure : kFigures) {
    for (int q : kPercentiles) {
      const std::string key = percentile_key(q, figure);
      if (p.get_double(key) > 0) out.push_back({key, figure, q / 100.0, p.get_double(key)});
    }
  }
  return out;
}

// The figure of `r` a percentile target bounds; +inf for a request that did not complete; NaN
// for one the figure does not apply to (TPOT of a single-token answer).
double figure_ms(const RequestRecord& r, const std::string& figure) {
  if (!r.done || r.outcome != Outcome::kOk) return std::numeric_limits<double>::infinity();
  if (figure == "ttft") return ns_to_ms(r.first_token - r.arrival);
  if (figure == "tpot") return r.output_tokens > 1 ? tpot_ms(r) : std::nan("");
  return ns_to_ms(r.finished - r.arrival);
}

// The type-7 quantile (as every percentile fleetsim reports) of values that may hold +inf; NaN
// (undefined, so not met) of no values.
double quantile_with_misses(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double h = q * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(h));
  const double frac = h - static_cast<double>(lo);
  if (frac == 0 || lo + 1 >= values.size()) return values[lo];
  if (std::isinf(values[lo + 1])) return values[lo + 1];
  return values[lo] + frac * (values[lo + 1] - values[lo]);
}

std::vector<PercentileOutcome> percentile_outcomes(const std::vector<RequestRecord>& records,
                                                   const std::vector<PercentileTarget>& targets) {
  std::vector<PercentileOutcome> out;
  for (const PercentileTarget& t : targets) {
    std::vector<double> values;
    for (const auto& r : records) {
      if (r.arrival < 0 || !r.measured) continue;
      if (const double v = figure_ms(r, t.figure); !std::isnan(v)) values.push_back(v);
    }
    const double value = quantile_with_misses(std::move(values), t.quantile);
    out.push_back({t.key, t.max_ms, value, !std::isnan(value) && value <= t.max_ms});
  }
  return out;
}

}  // namespace

const SloTargets& SloSpec::for_class(const std::string& slo_class) const {
  const auto it = classes.find(slo_class);
  return it == classes.end() ? targets : it->second;
}

std::int32_t SloSpec::priority_of(const std::string& slo_class) const {
  const auto it = priorities.find(slo_class);
  return it == priorities.end() ? 0 : it->second;
}

namespace {

const ParamSpec& class_priority_spec() {
  static const ParamSpec kSpec = ParamSpec().integer(
      "priority", 0,
      "the class's priority, as a Gateway API Inference Extension objective's: higher is served "
      "first by pods with server.scheduling_policy: priority (vLLM's request priority is its "
      "negation)",
      -1000000, 1000000);
  return kSpec;
}

}  // namespace

const ParamSpec& slo_targets_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .real("ttft_ms", 0, "time to first token at the client, at most (0 = no bound)", 0)
          .real("tpot_ms", 0,
                "time per output token after the first, at most, for requests of 2+ output "
                "tokens (0 = no bound)",
                0)
          .real("e2e_ms", 0, "arrival to last token, at most (0 = no bound)", 0);
  static const ParamSpec kWithPercentiles = [] {
    ParamSpec spec = kSpec;
    for (const char* figure : kFigures) {
      for (int q : kPercentiles) {
        spec.real(percentile_key(q, figure), 0,
                  "the arm's " + std::to_string(q) + "th percentile of " + figure_name(figure) +
                      ", at most (vLLM bench serve's name; a failed request counts as a miss; "
                      "the section's own, not a class's; 0 = no bound)",
                  0);
      }
    }
    return spec;
  }();
  return kWithPercentiles;
}

SloSpec parse_slo(const YAML::Node& node, const YamlWhere& where) {
  if (!node.IsMap()) {
    throw ScenarioError(where.at(node) +
                        ": expected a map {ttft_ms, tpot_ms, e2e_ms, classes: {NAME: {...}}}");
  }
  SloSpec slo;
  slo.enabled = true;
  const Params base =
      slo_targets_spec().resolve(node, where, slo_targets_spec().defaults(), {"classes"});
  slo.targets = targets_of(base);
  slo.percentiles = percentile_targets_of(base);
  bool bounded = slo.targets.any() || !slo.percentiles.empty();
  if (const YAML::Node classes = node["classes"]; classes.IsDefined()) {
    const YamlWhere cw = where.child("classes");
    if (!classes.IsMap() || classes.size() == 0) {
      throw ScenarioError(cw.at(classes) +
                          ": expected a map SLO class -> {ttft_ms, tpot_ms, "
                          "e2e_ms, priority} (the classes of workload.slo_class_mix)");
    }
    for (const auto& kv : classes) {
      const std::string name = kv.first.as<std::string>();
      if (!kv.second.IsMap()) {
        throw ScenarioError(cw.child(name).at(kv.second) +
                            ": expected a map {ttft_ms, tpot_ms, "
                            "e2e_ms, priority}");
      }
      for (const auto& field : kv.second) {
        const std::string key = field.first.as<std::string>();
        if (is_percentile_key(key)) {
          throw ScenarioError(cw.child(name).child(key).at(field.first) +
                              ": a percentile target bounds the arm's requests together; set it "
                              "at the top of the slo section, not per class");
        }
      }
      const SloTargets t =
          targets_of(slo_targets_spec().resolve(kv.second, cw.child(name), base, {"priority"}));
      YAML::Node priority(YAML::NodeType::Map);
      if (kv.second["priority"].IsDefined()) priority["priority"] = kv.second["priority"];
      const auto p = class_priority_spec().resolve(priority, cw.child(name)).get_int("priority");
      if (p != 0) slo.priorities[name] = static_cast<std::int32_t>(p);
      bounded = bounded || t.any();
      slo.classes[name] = t;
    }
  }
  if (!bounded) {
    throw ScenarioError(where.at(node) +
                        ": no target set; give ttft_ms, tpot_ms or e2e_ms (> 0), for every "
                        "request or per class, or a percentile target such as p95_ttft_ms");
  }
  return slo;
}

bool meets_slo(const RequestRecord& r, const SloTargets& t) {
  if (!r.done || r.outcome != Outcome::kOk) return false;
  if (t.ttft_ms > 0 && ns_to_ms(r.first_token - r.arrival) > t.ttft_ms) return false;
  if (t.tpot_ms > 0 && r.output_tokens > 1 && tpot_ms(r) > t.tpot_ms) return false;
  return t.e2e_ms <= 0 || ns_to_ms(r.finished - r.arrival) <= t.e2e_ms;
}

GoodputSummary summarize_goodput(const std::vector<RequestRecord>& records, const SloSpec& slo,
                                 double duration_s) {
  GoodputSummary g;
  std::map<std::string, SloClassGoodput> by_class;
  bool any_class = false;
  for (const auto& r : records) {
    if (r.arrival < 0 || !r.measured) continue;
    const bool good = meets_slo(r, slo.for_class(r.slo_class));
    ++g.requests;
    g.good += good ? 1 : 0;
    SloClassGoodput& c = by_class[r.slo_class];
    ++c.requests;
    c.good += good ? 1 : 0;
    any_class = any_class || !r.slo_class.empty();
  }
  auto ratio = [](std::int64_t a, std::int64_t b) {
    return b > 0 ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
  };
  g.attainment = ratio(g.good, g.requests);
  g.percentiles = percentile_outcomes(records, slo.percentiles);
  g.goodput_req_s = duration_s > 0 ? static_cast<double>(g.good) / duration_s : 0.0;
  if (any_class) {
    for (auto& [name, c] : by_class) {
      c.slo_class = name;
      c.attainment = ratio(c.good, c.requests);
      g.per_class.push_back(c);
    }
  }
  return g;
}

}  // namespace fleetsim
