#include "sim/fleet/slo.h"

#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

SloTargets targets_of(const Params& p) {
  return {p.get_double("ttft_ms"), p.get_double("tpot_ms"), p.get_double("e2e_ms")};
}

}  // namespace

const SloTargets& SloSpec::for_class(const std::string& slo_class) const {
  const auto it = classes.find(slo_class);
  return it == classes.end() ? targets : it->second;
}

const ParamSpec& slo_targets_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .real("ttft_ms", 0, "time to first token at the client, at most (0 = no bound)", 0)
          .real("tpot_ms", 0,
                "time per output token after the first, at most, for requests of 2+ output "
                "tokens (0 = no bound)",
                0)
          .real("e2e_ms", 0, "arrival to last token, at most (0 = no bound)", 0);
  return kSpec;
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
  bool bounded = slo.targets.any();
  if (const YAML::Node classes = node["classes"]; classes.IsDefined()) {
    const YamlWhere cw = where.child("classes");
    if (!classes.IsMap() || classes.size() == 0) {
      throw ScenarioError(cw.at(classes) +
                          ": expected a map SLO class -> {ttft_ms, tpot_ms, "
                          "e2e_ms} (the classes of workload.slo_class_mix)");
    }
    for (const auto& kv : classes) {
      const std::string name = kv.first.as<std::string>();
      if (!kv.second.IsMap()) {
        throw ScenarioError(cw.child(name).at(kv.second) +
                            ": expected a map {ttft_ms, tpot_ms, "
                            "e2e_ms}");
      }
      const SloTargets t = targets_of(slo_targets_spec().resolve(kv.second, cw.child(name), base));
      bounded = bounded || t.any();
      slo.classes[name] = t;
    }
  }
  if (!bounded) {
    throw ScenarioError(where.at(node) +
                        ": no target set; give ttft_ms, tpot_ms or e2e_ms (> 0), for every "
                        "request or per class");
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
