#include "sim/fleet/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "policies/policy.h"
#include "sim/errors.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/workload.h"

namespace fleetsim {
namespace {

void check_keys(const YAML::Node& node, const YamlWhere& where,
                const std::vector<std::string>& valid) {
  if (!node.IsMap())
    throw ScenarioError(where.at(node) + ": expected a map with fields " + join(valid, ", "));
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
      throw ScenarioError(where.child(key).at(kv.first) +
                          ": unknown field; valid fields: " + join(valid, ", "));
    }
  }
}

YAML::Node require(const YAML::Node& parent, const std::string& key, const YamlWhere& where,
                   const std::string& expected) {
  YAML::Node n = parent[key];
  if (!n.IsDefined() || n.IsNull()) {
    throw ScenarioError(where.at(parent) + ": missing field '" + key + "' (" + expected + ")");
  }
  return n;
}

std::string scalar(const YAML::Node& n, const YamlWhere& where, const std::string& expected) {
  if (!n.IsScalar()) throw ScenarioError(where.at(n) + ": expected " + expected);
  return n.Scalar();
}

template <typename T>
T number(const YAML::Node& n, const YamlWhere& where, const std::string& expected) {
  T v{};
  if (!n.IsScalar() || !YAML::convert<T>::decode(n, v)) {
    throw ScenarioError(where.at(n) + ": expected " + expected + ", got '" +
                        (n.IsScalar() ? n.Scalar() : std::string("a map or list")) + "'");
  }
  return v;
}

// Splits "a.b.0.c=value" and sets that node, creating maps on the way. A list element may be
// named by index or by its `name` field (arms.epp.params.x).
void apply_override(YAML::Node root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ScenarioError("--set " + assignment + ": expected PATH=VALUE, e.g. fleet.pods=2");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string part; std::getline(ss, part, '.');) parts.push_back(part);
  YAML::Node node = root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    const bool last = i + 1 == parts.size();
    YAML::Node next;
    if (node.IsSequence()) {
      bool found = false;
      const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
      for (size_t j = 0; j < node.size() && !found; ++j) {
        if ((numeric && j == std::stoul(key)) ||
            (node[j].IsMap() && node[j]["name"].IsDefined() && node[j]["name"].Scalar() == key)) {
          next = node[j];
          found = true;
        }
      }
      if (!found) throw ScenarioError("--set " + path + ": no list element '" + key + "'");
    } else {
      if (!node.IsMap() && !node.IsNull()) {
        throw ScenarioError("--set " + path + ": '" + parts[i - 1] + "' is not a map");
      }
      if (last) {
        // A flow value ([1, 2] or {a: 1}) is parsed; anything else stays a plain scalar.
        const bool flow = !value.empty() && (value.front() == '[' || value.front() == '{');
        node[key] = flow ? YAML::Load(value) : YAML::Node(value);
        return;
      }
      if (!node[key].IsDefined() || node[key].IsNull()) node[key] = YAML::Node(YAML::NodeType::Map);
      next = node[key];
    }
    node.reset(next);
  }
  throw ScenarioError("--set " + path + ": cannot set a list element as a whole");
}

FleetSpec parse_fleet(const YAML::Node& n, const YamlWhere& w) {
  check_keys(n, w,
             {"pods", "pods_per_gpu", "gpus_per_node", "gpu", "model", "server", "cost_model"});
  FleetSpec f;
  const YAML::Node pods = require(n, "pods", w, "number of pods, an integer >= 1");
  f.pods = number<std::int32_t>(pods, w.child("pods"), "an integer >= 1");
  if (f.pods < 1 || f.pods > 100000) {
    throw ScenarioError(w.child("pods").at(pods) + ": expected an integer in [1, 100000], got " +
                        pods.Scalar());
  }
  const ParamSpec layout = ParamSpec()
                               .integer("pods_per_gpu", 1, "model servers sharing one GPU", 1, 64)
                               .integer("gpus_per_node", 1, "GPUs per node", 1, 64);
  YAML::Node layout_node(YAML::NodeType::Map);
  for (const char* key : {"pods_per_gpu", "gpus_per_node"}) {
    if (n[key].IsDefined()) layout_node[key] = n[key];
  }
  const Params lp = layout.resolve(layout_node, w);
  f.pods_per_gpu = static_cast<std::int32_t>(lp.get_int("pods_per_gpu"));
  f.gpus_per_node = static_cast<std::int32_t>(lp.get_int("gpus_per_node"));
  const YAML::Node gpu = require(n, "gpu", w, "one of: " + join(gpu_names(), ", "));
  f.gpu = scalar(gpu, w.child("gpu"), "a GPU name");
  try {
    find_gpu(f.gpu);
  } catch (const UnknownNameError& e) {
    throw ScenarioError(w.child("gpu").at(gpu) + ": " + e.what());
  }
  const YAML::Node model = require(n, "model", w, "one of: " + join(model_names(), ", "));
  f.model = scalar(model, w.child("model"), "a model name");
  try {
    find_model(f.model);
  } catch (const UnknownNameError& e) {
    throw ScenarioError(w.child("model").at(model) + ": " + e.what());
  }
  f.server = server_spec().resolve(n["server"], w.child("server"));
  // vLLM processes sharing a GPU each take gpu_memory_utilization of it.
  const double util = f.server.get_double("gpu_memory_utilization");
  if (f.pods_per_gpu * util > 1.0 + 1e-9) {
    throw ScenarioError(w.child("server").child("gpu_memory_utilization").at(n) + ": " +
                        std::to_string(f.pods_per_gpu) + " pods per GPU x " + std::to_string(util) +
                        " exceeds the GPU; expected at most " +
                        std::to_string(1.0 / f.pods_per_gpu));
  }
  f.cost_model = cost_model_spec().resolve(n["cost_model"], w.child("cost_model"));
  return f;
}

ArmSpec parse_arm(const YAML::Node& n, const YamlWhere& w, const Params& gateway) {
  check_keys(n, w, {"name", "policy", "params", "gateway"});
  ArmSpec a;
  a.policy = scalar(require(n, "policy", w, "a policy name"), w.child("policy"), "a policy name");
  a.name = n["name"].IsDefined() ? scalar(n["name"], w.child("name"), "a name") : a.policy;
  const auto& reg = PolicyRegistry::instance();
  if (!reg.contains(a.policy)) {
    throw ScenarioError(w.child("policy").at(n["policy"]) + ": unknown policy '" + a.policy +
                        "'; valid policies: " + join(reg.names(), ", "));
  }
  a.params = reg.get(a.policy, "policy").spec.resolve(n["params"], w.child("params"));
  a.gateway = gateway_spec().resolve(n["gateway"], w.child("gateway"), gateway);
  const std::string& fallback = a.gateway.get_string("fallback_policy");
  if (!reg.contains(fallback)) {
    throw ScenarioError(w.child("gateway").child("fallback_policy").at(n) + ": unknown policy '" +
                        fallback + "'; valid policies: " + join(reg.names(), ", "));
  }
  return a;
}

}  // namespace

const ParamSpec& client_spec() {
  static const ParamSpec spec =
      ParamSpec()
          .text("retry", "none",
                "what a client does after a failed attempt: none, fixed (same delay each "
                "time) or exponential (doubling, with jitter)",
                {"none", "fixed", "exponential"})
          .integer("max_attempts", 3, "attempts in all, the first included", 1, 100)
          .real("retry_delay_ms", 100, "delay before the first retry", 0)
          .real("max_retry_delay_ms", 10000, "cap of the exponential delay", 0)
          .real("jitter", 0.2, "random +- fraction of each delay", 0, 1);
  return spec;
}

const std::vector<std::string>& measured_metric_names() {
  static const std::vector<std::string> names = {"prefix_cache_reuse_pct",
                                                 "warm_ttft_p50_ms",
                                                 "warm_ttft_p95_ms",
                                                 "warm_e2e_p50_ms",
                                                 "ttft_p50_ms",
                                                 "ttft_p95_ms",
                                                 "throughput_req_s",
                                                 "errors"};
  return names;
}

Scenario parse_scenario(const std::string& yaml_text, const std::string& label,
                        const std::vector<std::string>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(label + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  const YamlWhere w{label, ""};
  if (!root.IsMap()) throw ScenarioError(label + ": expected a YAML map at the top level");
  for (const auto& o : overrides) apply_override(root, o);
  check_keys(root, w,
             {"name", "description", "seed", "fleet", "workload", "gateway", "client", "faults",
              "arms", "sim", "measured", "sweep"});

  Scenario s;
  s.file = label;
  s.name = root["name"].IsDefined() ? scalar(root["name"], w.child("name"), "a name") : label;
  if (root["description"].IsDefined()) s.description = root["description"].as<std::string>();
  s.seed = root["seed"].IsDefined()
               ? number<std::uint64_t>(root["seed"], w.child("seed"), "a non-negative integer")
               : 0;
  s.fleet = parse_fleet(require(root, "fleet", w, "pods, gpu, model, server"), w.child("fleet"));

  const YAML::Node wl = require(root, "workload", w, "a map with 'type' and its parameters");
  const YamlWhere ww = w.child("workload");
  if (!wl.IsMap()) throw ScenarioError(ww.at(wl) + ": expected a map");
  const auto& wreg = WorkloadRegistry::instance();
  s.workload_type = scalar(require(wl, "type", ww, "one of: " + join(wreg.names(), ", ")),
                           ww.child("type"), "a workload type");
  if (!wreg.contains(s.workload_type)) {
    throw ScenarioError(ww.child("type").at(wl["type"]) + ": unknown workload '" + s.workload_type +
                        "'; valid workloads: " + join(wreg.names(), ", "));
  }
  ParamSpec wspec = wreg.get(s.workload_type, "workload").spec;
  wspec.text("type", s.workload_type, "workload kind");
  s.workload = wspec.resolve(wl, ww);

  const YAML::Node arms = require(root, "arms", w, "a list of {name, policy, params}");
  if (!arms.IsSequence() || arms.size() == 0) {
    throw ScenarioError(w.child("arms").at(arms) + ": expected a non-empty list of arms");
  }
  const Params gateway = gateway_spec().resolve(root["gateway"], w.child("gateway"));
  s.client = client_spec().resolve(root["client"], w.child("client"));
  s.faults = parse_faults(root["faults"], w.child("faults"));
  std::set<std::string> names;
  for (size_t i = 0; i < arms.size(); ++i) {
    ArmSpec a = parse_arm(arms[i], w.child("arms").child(std::to_string(i)), gateway);
    if (!names.insert(a.name).second) {
      throw ScenarioError(w.child("arms").child(std::to_string(i)).at(arms[i]) +
                          ": duplicate arm name '" + a.name + "'");
    }
    s.arms.push_back(std::move(a));
  }

  if (root["sim"].IsDefined()) {
    const ParamSpec sim_spec = ParamSpec().real(
        "horizon_s", 0, "stop the simulation at this time (0 = when the workload is done)", 0);
    s.horizon_s = sim_spec.resolve(root["sim"], w.child("sim")).get_double("horizon_s");
  }

  if (const YAML::Node sw = root["sweep"]; sw.IsDefined()) {
    const YamlWhere sww = w.child("sweep");
    check_keys(sw, sww, {"vary"});
    const YAML::Node vary = sw["vary"];
    if (!vary.IsMap())
      throw ScenarioError(sww.child("vary").at(vary) + ": expected a map path -> [values]");
    for (const auto& kv : vary) {
      const std::string key = kv.first.as<std::string>();
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        throw ScenarioError(sww.child("vary").child(key).at(kv.second) +
                            ": expected a non-empty list of values");
      }
      std::vector<std::string> values;
      for (const auto& v : kv.second) {
        YAML::Emitter out;
        out << YAML::Flow << v;
        values.emplace_back(out.c_str());
      }
      s.sweep.emplace_back(key, std::move(values));
    }
  }

  if (const YAML::Node m = root["measured"]; m.IsDefined()) {
    const YamlWhere mw = w.child("measured");
    if (!m.IsMap()) throw ScenarioError(mw.at(m) + ": expected a map arm -> {metric: value}");
    for (const auto& arm : m) {
      const std::string arm_name = arm.first.as<std::string>();
      if (arm_name == "source") {
        s.measured_source = arm.second.as<std::string>();
        continue;
      }
      if (!names.count(arm_name)) {
        throw ScenarioError(mw.child(arm_name).at(arm.first) + ": no arm named '" + arm_name +
                            "'; arms: " + join({names.begin(), names.end()}, ", "));
      }
      for (const auto& metric : arm.second) {
        const std::string key = metric.first.as<std::string>();
        const auto& valid = measured_metric_names();
        if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
          throw ScenarioError(mw.child(arm_name).child(key).at(metric.first) +
                              ": unknown metric; valid metrics: " + join(valid, ", "));
        }
        s.measured[arm_name][key] =
            number<double>(metric.second, mw.child(arm_name).child(key), "a number");
      }
    }
  }
  return s;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ": cannot open the scenario file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_scenario(buf.str(), path, overrides);
}

}  // namespace fleetsim
