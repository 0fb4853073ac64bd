#include "sim/fleet/scenario_autoscaling.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "sim/errors.h"
#include "sim/fleet/autoscaler.h"

namespace fleetsim {
namespace {

// An autoscaled pool starts at its own pod count (fleet.pods without pools), inside [min_pods,
// max_pods], and must name one of the fleet's pools when it has several. Returns its index.
int check_hpa(const Params& a, const YAML::Node& node, const YamlWhere& w, const FleetSpec& fleet) {
  const std::int64_t lo = a.get_int("min_pods");
  const std::int64_t hi = a.get_int("max_pods");
  if (lo > hi) {
    throw ScenarioError(w.child("min_pods").at(node) + ": min_pods " + std::to_string(lo) +
                        " is above max_pods " + std::to_string(hi));
  }
  const std::vector<std::string> names = pool_names(fleet);
  const int pool = autoscaled_pool(a, names);
  if (pool < 0) {
    throw ScenarioError(w.child("pool").at(node) + ": " +
                        (a.get_string("pool").empty()
                             ? std::string("the fleet has several pools; name the one that scales "
                                           "(pool), or give each its own HPA (pools)")
                             : "no pool named '" + a.get_string("pool") + "'") +
                        "; pools: " + join(names, ", "));
  }
  const std::int32_t start =
      fleet.pools.empty() ? fleet.pods : fleet.pools[static_cast<size_t>(pool)].pods;
  if (start < lo || start > hi) {
    throw ScenarioError(w.at(node) + ": " +
                        (fleet.pools.empty()
                             ? std::string("fleet.pods")
                             : "pool " + names[static_cast<size_t>(pool)] + "'s pods") +
                        " (" + std::to_string(start) +
                        ", the pods at the start) must lie in [min_pods, max_pods] = [" +
                        std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  pod_schedule_from(a, w.child("schedule").at(node));
  if (a.get_double("termination_grace_s") < a.get_double("prestop_s")) {
    std::ostringstream prestop;
    prestop << a.get_double("prestop_s");
    throw ScenarioError(w.child("termination_grace_s").at(node) +
                        ": the grace period must cover the preStop hook (prestop_s " +
                        prestop.str() + " s)");
  }
  return pool;
}

// A section or entry written in the file: a missing key's node is undefined, an empty value or
// a default-constructed node null.
bool given(const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); }

// The section's `pools` map (null when it has none), its keys checked against the fleet.
YAML::Node pools_map(const YAML::Node& section, const YamlWhere& w,
                     const std::vector<std::string>& names) {
  if (!given(section) || !section.IsMap() || !section["pools"].IsDefined()) return {};
  const YAML::Node m = section["pools"];
  const YamlWhere pw = w.child("pools");
  if (!m.IsMap()) {
    throw ScenarioError(pw.at(m) +
                        ": expected a map from pool name to that pool's HPA, e.g. {decode: "
                        "{metric: running, target: 24}}; pools: " +
                        join(names, ", "));
  }
  for (const auto& kv : m) {
    const std::string name = kv.first.Scalar();
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      throw ScenarioError(pw.child(name).at(kv.first) + ": no pool named '" + name +
                          "'; pools: " + join(names, ", "));
    }
    if (kv.second.IsMap() && kv.second["pool"].IsDefined()) {
      throw ScenarioError(pw.child(name).child("pool").at(kv.second["pool"]) +
                          ": an entry of pools scales the pool it is keyed by; drop pool");
    }
  }
  return m;
}

std::vector<HpaSpec> one_hpa(const Params& base, const YAML::Node& scenario, const YamlWhere& sw,
                             const YAML::Node& arm, const YamlWhere& aw, const FleetSpec& fleet) {
  const Params p = autoscaling_spec().resolve(arm, aw, base, {"pools"});
  if (!autoscaling_enabled(p)) return {};
  const bool own = given(arm);
  const int pool = check_hpa(p, own ? arm : scenario, own ? aw : sw, fleet);
  return {HpaSpec{pool, pool_names(fleet)[static_cast<size_t>(pool)], p}};
}

}  // namespace

std::vector<HpaSpec> resolve_hpas(const YAML::Node& scenario, const YamlWhere& sw,
                                  const YAML::Node& arm, const YamlWhere& aw,
                                  const FleetSpec& fleet) {
  const ParamSpec& spec = autoscaling_spec();
  const Params base = spec.resolve(scenario, sw, spec.defaults(), {"pools"});
  const std::vector<std::string> names = pool_names(fleet);
  const YAML::Node scenario_pools = pools_map(scenario, sw, names);
  if (given(arm)) spec.resolve(arm, aw, base, {"pools"});  // its own errors first
  const YAML::Node arm_pools = pools_map(arm, aw, names);
  if (!given(scenario_pools) && !given(arm_pools)) {
    return one_hpa(base, scenario, sw, arm, aw, fleet);
  }
  // One HPA per pool: `pool` would name a second way which pool a setting is for.
  for (const auto& [section, w] : {std::pair{scenario, sw}, std::pair{arm, aw}}) {
    if (given(section) && section.IsMap() && section["pool"].IsDefined()) {
      throw ScenarioError(w.child("pool").at(section["pool"]) +
                          ": pool names the one pool of a single HPA; with pools, each pool's "
                          "HPA is the entry under its name");
    }
  }
  std::vector<HpaSpec> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    const YAML::Node sp = given(scenario_pools) ? scenario_pools[name] : YAML::Node();
    const YAML::Node ap = given(arm_pools) ? arm_pools[name] : YAML::Node();
    // An entry with no settings (`decode:` or `decode: {}`) still gives the pool an HPA.
    if (!(given(scenario_pools) && sp.IsDefined()) && !(given(arm_pools) && ap.IsDefined())) {
      continue;
    }
    // The scenario's fields, its entry for the pool, the arm's fields, the arm's entry. `at` is a
    // pointer: assigning a YAML::Node writes through to the tree it came from.
    Params p = base;
    const YAML::Node* at = &scenario;
    YamlWhere w = sw;
    if (given(scenario_pools) && sp.IsDefined()) {
      w = sw.child("pools").child(name);
      p = spec.resolve(sp, w, p);
      at = &sp;
    }
    if (given(arm)) {
      p = spec.resolve(arm, aw, p, {"pools"});
      at = &arm;
      w = aw;
    }
    if (given(arm_pools) && ap.IsDefined()) {
      w = aw.child("pools").child(name);
      p = spec.resolve(ap, w, p);
      at = &ap;
    }
    if (!autoscaling_enabled(p)) continue;
    p.set("pool", name);
    out.push_back(HpaSpec{check_hpa(p, *at, w, fleet), name, p});
  }
  return out;
}

}  // namespace fleetsim
