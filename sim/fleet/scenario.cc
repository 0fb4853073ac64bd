#include "sim/fleet/scenario.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include "models/calibration.h"
#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/kv_capacity.h"
#include "models/llm_catalog.h"
#include "models/trace_common.h"
#include "policies/policy.h"
#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/campaign/campaign.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/gpu_defs.h"
#include "sim/fleet/model_defs.h"
#include "sim/fleet/scenario_autoscaling.h"
#include "sim/fleet/scenario_layout.h"
#include "sim/fleet/workload.h"
#include "sim/fleet/workloads/workload_util.h"
#include "sim/input_files.h"
#include "sim/named.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

YAML::Node require(const YAML::Node& parent, const std::string& key, const YamlWhere& where,
                   const std::string& expected) {
  YAML::Node n = parent[key];
  if (!n.IsDefined() || n.IsNull()) {
    throw ScenarioError(where.at(parent) + ": missing field '" + key + "' (" + expected + ")");
  }
  return n;
}

template <typename T>
T number(const YAML::Node& n, const YamlWhere& where, const std::string& expected) {
  T v{};
  bool ok = false;
  if constexpr (std::is_integral_v<T>) {
    ok = decode_decimal(n, v);
  } else {
    ok = n.IsScalar() && YAML::convert<T>::decode(n, v);
  }
  if (!ok) {
    throw ScenarioError(where.at(n) + ": expected " + expected + ", got '" +
                        (n.IsScalar() ? n.Scalar() : std::string("a map or list")) + "'");
  }
  return v;
}

// A copy of a node parsed from a --set value without its marks: their lines count from the
// value's own text, so an error would point at line 1 of the scenario file. Unmarked, errors
// name the file and the field, as for a plain scalar override.
YAML::Node without_marks(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: {
      YAML::Node s(n.Scalar());
      s.SetTag(n.Tag());
      return s;
    }
    case YAML::NodeType::Sequence: {
      YAML::Node seq(YAML::NodeType::Sequence);
      for (const auto& e : n) seq.push_back(without_marks(e));
      return seq;
    }
    case YAML::NodeType::Map: {
      YAML::Node map(YAML::NodeType::Map);
      for (const auto& kv : n) map[without_marks(kv.first)] = without_marks(kv.second);
      return map;
    }
    case YAML::NodeType::Null:
      return YAML::Node(YAML::NodeType::Null);
    default:
      return YAML::Node();
  }
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
  if (path.back() == '.' || std::find(parts.begin(), parts.end(), "") != parts.end()) {
    throw ScenarioError("--set " + assignment +
                        ": an empty name in the path (a leading, trailing or double '.'); "
                        "expected PATH=VALUE, e.g. fleet.pods=2");
  }
  YAML::Node node = root;
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& key = parts[i];
    const bool last = i + 1 == parts.size();
    YAML::Node next;
    if (node.IsSequence()) {
      bool found = false;
      const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit);
      if (numeric && key.size() > 9) {
        throw ScenarioError("--set " + path + ": list index '" + key + "' is out of range");
      }
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
        node[key] = flow ? without_marks(parse_yaml(value, "--set " + path)) : YAML::Node(value);
        return;
      }
      if (!node[key].IsDefined() || node[key].IsNull()) node[key] = YAML::Node(YAML::NodeType::Map);
      next = node[key];
    }
    node.reset(next);
  }
  throw ScenarioError("--set " + path + ": cannot set a list element as a whole");
}

// A GPU or model name: `key` of `n` if given, else `inherited` (the fleet-level value);
// `required` says a name must come from one of them. Looked up among the fleet's own
// definitions (fleet.gpus, fleet.models), then the catalog.
std::string catalog_name(const YAML::Node& n, const std::string& key, const YamlWhere& w,
                         const std::string& inherited, bool required, const std::string& where_else,
                         const FleetSpec& f) {
  const bool is_gpu = key == "gpu";
  std::vector<std::string> names = is_gpu ? entry_names(f.gpus) : entry_names(f.models);
  for (auto& m : is_gpu ? gpu_names() : model_names()) names.push_back(std::move(m));
  const YAML::Node v = n[key];
  if (!v.IsDefined() || v.IsNull()) {
    if (required && inherited.empty()) {
      throw ScenarioError(w.at(n) + ": missing field '" + key + "'" + where_else +
                          " (one of: " + join(names, ", ") + ")");
    }
    return inherited;
  }
  const std::string name = scalar_text(v, w.child(key), is_gpu ? "a GPU name" : "a model name");
  try {
    if (is_gpu) {
      find_gpu(f.gpus, name);
    } else {
      find_model(f.models, name);
    }
  } catch (const UnknownNameError& e) {
    throw ScenarioError(
        w.child(key).at(v) + ": " + e.what() + "; or describe it under fleet." +
        (is_gpu ? "gpus (fleetsim describe gpu)" : "models (fleetsim describe model)"));
  }
  return name;
}

// A cost_model section over `base`: with `calibration: FILE`, the file's values come between
// the base and the section's own fields.
Params resolve_cost_model(const YAML::Node& n, const YamlWhere& w, const Params& base,
                          const std::string& gpu, const std::string& model, std::int64_t tp,
                          const std::vector<LlmSpec>& models) {
  const YAML::Node cal = n.IsDefined() && n.IsMap() ? n["calibration"] : YAML::Node();
  if (!cal.IsDefined() || cal.IsNull() || (cal.IsScalar() && cal.Scalar().empty())) {
    return cost_model_spec().resolve(n, w, base);
  }
  const YamlWhere cw = w.child("calibration");
  const std::string value =
      scalar_text(cal, cw, "the path of a file written by `fleetsim calibrate --out`");
  CalibrationFile file;
  try {
    file = read_calibration_file(
        input_file_path(value, cw, cal, "calibration file",
                        "write one with `fleetsim calibrate MEASUREMENTS.csv --out FILE`"),
        base);
  } catch (const ScenarioError& e) {
    const std::string what = e.what();
    throw ScenarioError(what.find(cw.path) != std::string::npos ? what : cw.at(cal) + ": " + what);
  }
  const auto differs = [](const std::string& a, const std::string& b) {
    return !a.empty() && !b.empty() && a != b;
  };
  if (differs(file.gpu, gpu) || differs(file.model, model) || (file.tp > 0 && file.tp != tp)) {
    const auto shape = [](const std::string& m, const std::string& g, std::int64_t gpus) {
      return (m.empty() ? "?" : m) + " on " + (g.empty() ? "?" : g) +
             (gpus > 0 ? " x" + std::to_string(gpus) : "");
    };
    spdlog::warn("{}: {} was calibrated for {}, used here for {}", cw.at(cal), file.path,
                 shape(file.model, file.gpu, file.tp), shape(model, gpu, tp));
  }
  // A fleet of pools names its model per pool; at fleet level it may name none, or join theirs.
  const bool one_model = !model.empty() && model.find('+') == std::string::npos;
  const LlmSpec* llm = one_model ? &find_model(models, model) : nullptr;
  const std::string changes =
      file.form == "roofline" ? roofline_changes_since(file.revision, llm) : std::string();
  if (!changes.empty()) {
    spdlog::warn(
        "{}: {} was fitted against an earlier roofline (cost_model_revision {}, now {}), whose "
        "efficiencies absorbed what it did not charge: {}; refit it with `fleetsim calibrate` "
        "from the same measurements",
        cw.at(cal), file.path, file.revision, kRooflineRevision, changes);
  }
  return cost_model_spec().resolve(n, w, file.cost_model);
}

bool valid_pool_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

std::vector<PoolSpec> parse_pools(const YAML::Node& list, const YamlWhere& w, const FleetSpec& f) {
  if (!list.IsSequence() || list.size() == 0) {
    throw ScenarioError(w.at(list) +
                        ": expected a non-empty list of pools, each {name, pods, "
                        "gpu, model, server, cost_model, pods_per_gpu}");
  }
  std::vector<PoolSpec> pools;
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node n = list[i];
    const YamlWhere pw = w.child(std::to_string(i));
    check_keys(n, pw,
               {"name", "pods", "pods_per_gpu", "gpu_sharing", "mps_active_thread_percentage",
                "role", "gpu", "model", "server", "cost_model"});
    PoolSpec p;
    p.where = pw.at(n);
    const YAML::Node name = require(n, "name", pw, "a pool name: letters, digits, '_' or '-'");
    p.name = scalar_text(name, pw.child("name"), "a pool name");
    if (!valid_pool_name(p.name)) {
      throw ScenarioError(pw.child("name").at(name) + ": '" + p.name +
                          "' is not a pool name; expected letters, digits, '_' or '-'");
    }
    if (!names.insert(p.name).second) {
      throw ScenarioError(pw.child("name").at(name) + ": duplicate pool name '" + p.name + "'");
    }
    const ParamSpec layout =
        gpu_layout_spec(f.pods_per_gpu, gpu_sharing_names()[static_cast<size_t>(f.gpu_sharing)],
                        f.mps_active_thread_percentage)
            .integer("pods", 1, "pods in the pool", 1, 100000)
            .text("role", "both",
                  "prefill/decode disaggregation: both (whole requests), prefill (prompts for "
                  "decode pods) or decode (reads prompts' KV from prefill pods)",
                  pod_role_names());
    YAML::Node layout_node(YAML::NodeType::Map);
    require(n, "pods", pw, "number of pods in the pool, an integer >= 1");
    for (const char* key :
         {"pods", "pods_per_gpu", "gpu_sharing", "mps_active_thread_percentage", "role"}) {
      if (n[key].IsDefined()) layout_node[key] = n[key];
    }
    const Params lp = layout.resolve(layout_node, pw);
    const auto& roles = pod_role_names();
    p.role = static_cast<PodRole>(std::find(roles.begin(), roles.end(), lp.get_string("role")) -
                                  roles.begin());
    p.pods = static_cast<std::int32_t>(lp.get_int("pods"));
    p.pods_per_gpu = static_cast<std::int32_t>(lp.get_int("pods_per_gpu"));
    p.gpu_sharing = sharing_of(lp);
    p.mps_active_thread_percentage =
        static_cast<std::int32_t>(lp.get_int("mps_active_thread_percentage"));
    const std::string here = " (set it on the pool or at fleet level)";
    p.gpu = catalog_name(n, "gpu", pw, f.gpu, true, here, f);
    p.model = catalog_name(n, "model", pw, f.model, true, here, f);
    p.server = server_spec().resolve(n["server"], pw.child("server"), f.server);
    check_vllm_version(n, pw, p.server);
    check_gpu_share(n, pw, p.pods_per_gpu, p.gpu_sharing, p.server);
    p.cost_model = resolve_cost_model(n["cost_model"], pw.child("cost_model"), f.cost_model, p.gpu,
                                      p.model, p.server.get_int("tensor_parallel_size"), f.models);
    check_gpu_sharing(n, pw, p, f);
    // One request's block hashes serve every pod, so every engine hashes at one block size: the
    // server's, or the one vLLM's latent-attention kernels impose on the pool's GPU.
    const auto block_size = [&f](const PoolSpec& q) {
      return attention_block_size(find_gpu(f.gpus, q.gpu), find_model(f.models, q.model),
                                  static_cast<std::int32_t>(q.server.get_int("block_size")));
    };
    if (!pools.empty() && block_size(p) != block_size(pools[0])) {
      const bool imposed = block_size(p) != p.server.get_int("block_size") ||
                           block_size(pools[0]) != pools[0].server.get_int("block_size");
      throw ScenarioError(
          pw.child("server").child("block_size").at(n) + ": pool '" + p.name + "' runs " +
          std::to_string(block_size(p)) + "-token KV blocks and pool '" + pools[0].name + "' " +
          std::to_string(block_size(pools[0])) + "; every pool must use one KV block size" +
          (imposed ? " (vLLM's latent-attention kernels impose theirs on Hopper "
                     "and Blackwell: set fleet.server.block_size to one both "
                     "accept, e.g. 64)"
                   : ""));
    }
    pools.push_back(std::move(p));
  }
  const bool prefill = std::any_of(pools.begin(), pools.end(),
                                   [](const PoolSpec& p) { return p.role == PodRole::kPrefill; });
  const bool decode = std::any_of(pools.begin(), pools.end(),
                                  [](const PoolSpec& p) { return p.role != PodRole::kPrefill; });
  if (prefill && !decode) {
    throw ScenarioError(w.at(list) +
                        ": every pool has role prefill; expected a pool with role decode (or "
                        "both) to decode what the prefill pods compute");
  }
  return pools;
}

// Distinct values in order, joined with '+'.
std::string joined(const std::vector<PoolSpec>& pools, std::string PoolSpec::*field) {
  std::vector<std::string> seen;
  for (const auto& p : pools) {
    if (std::find(seen.begin(), seen.end(), p.*field) == seen.end()) seen.push_back(p.*field);
  }
  return join(seen, "+");
}

FleetSpec parse_fleet(const YAML::Node& n, const YamlWhere& w) {
  check_keys(n, w,
             {"pods", "pods_per_gpu", "gpu_sharing", "mps_active_thread_percentage",
              "gpus_per_node", "gpu", "model", "server", "cost_model", "pools", "models", "gpus"});
  FleetSpec f;
  f.where = w.at(n);
  if (const YAML::Node gpus = n["gpus"]; gpus.IsDefined()) {
    f.gpus = parse_gpu_defs(gpus, w.child("gpus"));
  }
  if (const YAML::Node models = n["models"]; models.IsDefined()) {
    f.models = parse_model_defs(models, w.child("models"));
  }
  const YAML::Node pool_list = n["pools"];
  const bool pooled = pool_list.IsDefined() && !pool_list.IsNull();
  const YAML::Node pods = n["pods"];
  if (!pooled || pods.IsDefined()) {
    require(n, "pods", w, "number of pods, an integer >= 1");
    f.pods = number<std::int32_t>(pods, w.child("pods"), "an integer >= 1");
    if (f.pods < 1 || f.pods > 100000) {
      throw ScenarioError(w.child("pods").at(pods) + ": expected an integer in [1, 100000], got " +
                          pods.Scalar());
    }
  }
  const ParamSpec& layout = fleet_layout_spec();
  YAML::Node layout_node(YAML::NodeType::Map);
  for (const char* key :
       {"pods_per_gpu", "gpu_sharing", "mps_active_thread_percentage", "gpus_per_node"}) {
    if (n[key].IsDefined()) layout_node[key] = n[key];
  }
  const Params lp = layout.resolve(layout_node, w);
  f.pods_per_gpu = static_cast<std::int32_t>(lp.get_int("pods_per_gpu"));
  f.gpus_per_node = static_cast<std::int32_t>(lp.get_int("gpus_per_node"));
  f.gpu_sharing = sharing_of(lp);
  f.mps_active_thread_percentage =
      static_cast<std::int32_t>(lp.get_int("mps_active_thread_percentage"));
  f.gpu = catalog_name(n, "gpu", w, "", !pooled, "", f);
  f.model = catalog_name(n, "model", w, "", !pooled, "", f);
  f.server = server_spec().resolve(n["server"], w.child("server"));
  check_vllm_version(n, w, f.server);
  f.cost_model =
      resolve_cost_model(n["cost_model"], w.child("cost_model"), cost_model_spec().defaults(),
                         f.gpu, f.model, f.server.get_int("tensor_parallel_size"), f.models);
  if (!pooled) {
    check_gpu_share(n, w, f.pods_per_gpu, f.gpu_sharing, f.server);
    check_gpu_sharing(n, w, fleet_pools(f).front(), f);
    return f;
  }
  check_sm_cap(n, w, f.gpu_sharing, f.mps_active_thread_percentage);
  f.pools = parse_pools(pool_list, w.child("pools"), f);
  std::int32_t total = 0;
  for (const auto& p : f.pools) total += p.pods;
  if (pods.IsDefined() && f.pods != total) {
    throw ScenarioError(w.child("pods").at(pods) + ": " + std::to_string(f.pods) +
                        " differs from the pools' " + std::to_string(total) +
                        " pods; leave fleet.pods out with fleet.pools, or make them agree");
  }
  if (total > 100000) {
    throw ScenarioError(w.child("pools").at(pool_list) + ": " + std::to_string(total) +
                        " pods in all; expected at most 100000");
  }
  f.pods = total;
  if (f.gpu.empty()) f.gpu = joined(f.pools, &PoolSpec::gpu);
  if (f.model.empty()) f.model = joined(f.pools, &PoolSpec::model);
  return f;
}

// Checks the parameters that name something outside their spec (a pool, a policy, another
// policy's parameters) against the fleet and the registry.
void check_references(const ParamSpec& spec, const Params& params, const YAML::Node& node,
                      const YamlWhere& w, const FleetSpec& fleet) {
  const auto& reg = PolicyRegistry::instance();
  const std::vector<std::string> pools = pool_names(fleet);
  // `node` may be absent (no params: section): a node that is not defined has no type.
  const bool map = node.IsDefined() && node.IsMap();
  auto at = [&](const std::string& key) {
    const YAML::Node v = map ? node[key] : YAML::Node();
    return v.IsDefined() ? w.child(key).at(v) : w.child(key).at(node);
  };
  for (const auto& d : spec.defs()) {
    if (d.ref == ParamRef::kNone) continue;
    const std::string& value = params.get_string(d.name);
    if (d.ref == ParamRef::kPool && !value.empty() &&
        std::find(pools.begin(), pools.end(), value) == pools.end()) {
      throw ScenarioError(at(d.name) + ": no pool named '" + value +
                          "' in the fleet; valid pools: " + join(pools, ", "));
    }
    if (d.ref == ParamRef::kPolicy && !reg.contains(value)) {
      throw ScenarioError(at(d.name) + ": unknown policy '" + value +
                          "'; valid policies: " + join(reg.names(), ", "));
    }
    if (d.ref == ParamRef::kParamsOf) {
      const std::string& inner = params.get_string(d.ref_param);
      if (!reg.contains(inner)) continue;  // reported at d.ref_param
      const ParamSpec inner_spec = reg.get(inner, "policy").spec;
      const YAML::Node v = map ? node[d.name] : YAML::Node();
      if (v.IsDefined() && v.IsMap()) {
        // The map as written: errors cite its own line.
        inner_spec.resolve(v, w.child(d.name));
      } else {
        parse_params_map(value, inner_spec, w.child(d.name).at(node) + " (" + inner + ")");
      }
    }
  }
}

// What only the gateway reads of its section (the tenant_rate_limit list), checked where the
// section is written.
void check_gateway(const Params& gateway, const YAML::Node& node, const YamlWhere& where) {
  try {
    (void)gateway_config_from(gateway);
  } catch (const ScenarioError& e) {
    const YAML::Node field = node.IsMap() ? node["tenant_rate_limit"] : YAML::Node();
    throw ScenarioError(
        (field.IsDefined() ? where.child("tenant_rate_limit").at(field) : where.at(node)) + ": " +
        e.what());
  }
}

ArmSpec parse_arm(const YAML::Node& n, const YamlWhere& w, const Params& gateway,
                  const YAML::Node& autoscaling, const YamlWhere& autoscaling_where,
                  const FleetSpec& fleet) {
  check_keys(n, w, {"name", "policy", "params", "gateway", "autoscaling"});
  ArmSpec a;
  a.policy =
      scalar_text(require(n, "policy", w, "a policy name"), w.child("policy"), "a policy name");
  a.name = n["name"].IsDefined() ? scalar_text(n["name"], w.child("name"), "a name") : a.policy;
  // The name keys the arm's column, its JSON entry and `measured:`; an empty one keys nothing.
  if (a.name.empty()) {
    throw ScenarioError(w.child("name").at(n["name"]) + ": expected a non-empty arm name");
  }
  // It is also a CSV field, a column and a file's JSON key: nothing a spreadsheet would read as
  // a formula or a reader as two fields.
  const auto plain = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!plain(a.name.front()) || !std::all_of(a.name.begin(), a.name.end(), [&](char c) {
        return plain(c) || c == '_' || c == '-' || c == '.';
      })) {
    throw ScenarioError(w.child("name").at(n["name"]) + ": arm name '" + a.name +
                        "' is not a plain name; expected letters, digits, '_', '-' and '.', "
                        "starting with a letter or a digit");
  }
  const auto& reg = PolicyRegistry::instance();
  if (!reg.contains(a.policy)) {
    throw ScenarioError(w.child("policy").at(n["policy"]) + ": unknown policy '" + a.policy +
                        "'; valid policies: " + join(reg.names(), ", "));
  }
  const ParamSpec spec = reg.get(a.policy, "policy").spec;
  a.params = spec.resolve(n["params"], w.child("params"));
  check_references(spec, a.params, n["params"], w.child("params"), fleet);
  a.gateway = gateway_spec().resolve(n["gateway"], w.child("gateway"), gateway);
  check_gateway(a.gateway, n["gateway"], w.child("gateway"));
  for (const char* field : {"fallback_policy", "prefill_policy"}) {
    const std::string& name = a.gateway.get_string(field);
    if (!reg.contains(name) && !(name.empty() && std::string(field) == "prefill_policy")) {
      throw ScenarioError(w.child("gateway").child(field).at(n) + ": unknown policy '" + name +
                          "'; valid policies: " + join(reg.names(), ", "));
    }
  }
  a.autoscaling =
      resolve_hpas(autoscaling, autoscaling_where, n["autoscaling"], w.child("autoscaling"), fleet);
  for (const HpaSpec& h : a.autoscaling) {
    if (h.params.get_int("min_pods") == 0 && a.gateway.get_double("hold_for_endpoints_s") <= 0) {
      throw ScenarioError(w.at(n) + ": arm " + a.name + ": pool " + h.pool_name +
                          " may scale to zero (autoscaling min_pods 0), so the gateway must hold "
                          "requests while it has no pod, as KEDA's HTTP add-on interceptor "
                          "does: set gateway.hold_for_endpoints_s (e.g. 300)");
    }
  }
  return a;
}

}  // namespace

std::vector<PoolSpec> fleet_pools(const FleetSpec& fleet) {
  if (!fleet.pools.empty()) return fleet.pools;
  PoolSpec p;
  p.name = "default";
  p.pods = fleet.pods;
  p.pods_per_gpu = fleet.pods_per_gpu;
  p.gpu_sharing = fleet.gpu_sharing;
  p.mps_active_thread_percentage = fleet.mps_active_thread_percentage;
  p.gpu = fleet.gpu;
  p.model = fleet.model;
  p.server = fleet.server;
  p.cost_model = fleet.cost_model;
  p.where = fleet.where;
  return {p};
}

std::string located_workload_error(const Scenario& s, const std::string& what) {
  const std::string prefix = "workload";
  if (what.rfind(prefix, 0) != 0) return what;
  std::string field;
  if (what.size() > prefix.size() && what[prefix.size()] == '.') {
    const size_t end = what.find_first_of(":./ ", prefix.size() + 1);
    field = what.substr(prefix.size() + 1, end - prefix.size() - 1);
  }
  auto it = s.workload_places.find(field);
  if (it == s.workload_places.end()) it = s.workload_places.find("");
  return it == s.workload_places.end() ? what : located(it->second, what);
}

std::vector<std::string> pool_names(const FleetSpec& fleet) {
  std::vector<std::string> names;
  for (const PoolSpec& p : fleet_pools(fleet)) names.push_back(p.name);
  return names;
}

const ParamSpec& client_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("retry", "none",
                "what a client does after a failed attempt: none, fixed (same delay each "
                "time) or exponential (doubling, with jitter)",
                {"none", "fixed", "exponential"})
          .integer("max_attempts", 3, "attempts in all, the first included", 1, 100)
          .real("retry_delay_ms", 100, "delay before the first retry", 0)
          .real("max_retry_delay_ms", 10000, "cap of the exponential delay", 0)
          .real("jitter", 0.2, "random +- fraction of each delay", 0, 1);
  return kSpec;
}

namespace {

Scenario parse_scenario_text(const std::string& yaml_text, const std::string& label,
                             const std::vector<std::string>& overrides) {
  YAML::Node root = parse_yaml(yaml_text, label);
  auto overridden = std::make_shared<std::vector<std::string>>();
  for (const auto& o : overrides) overridden->push_back(o.substr(0, o.find('=')));
  const YamlWhere w{label, "", "", std::move(overridden)};
  if (!root.IsMap()) throw ScenarioError(label + ": expected a YAML map at the top level");
  for (const auto& o : overrides) apply_override(root, o);
  check_keys(root, w,
             {"name", "description", "seed", "fleet", "workload", "gateway", "client", "faults",
              "arms", "sim", "slo", "measured", "sweep", "campaign", "autoscaling"});

  Scenario s;
  s.file = label;
  s.name = root["name"].IsDefined() ? scalar_text(root["name"], w.child("name"), "a name") : label;
  if (s.name.empty()) {
    throw ScenarioError(w.child("name").at(root["name"]) +
                        ": expected a non-empty scenario name (or leave the field out)");
  }
  if (root["description"].IsDefined()) {
    s.description = scalar_text(root["description"], w.child("description"), "a text");
  }
  s.seed = root["seed"].IsDefined()
               ? number<std::uint64_t>(root["seed"], w.child("seed"), "a non-negative integer")
               : 0;
  s.fleet = parse_fleet(require(root, "fleet", w, "pods, gpu, model, server (or pools)"),
                        w.child("fleet"));

  const YAML::Node wl = require(root, "workload", w, "a map with 'type' and its parameters");
  const YamlWhere ww = w.child("workload");
  if (!wl.IsMap()) throw ScenarioError(ww.at(wl) + ": expected a map");
  const auto& wreg = WorkloadRegistry::instance();
  s.workload_type = scalar_text(require(wl, "type", ww, "one of: " + join(wreg.names(), ", ")),
                                ww.child("type"), "a workload type");
  if (!wreg.contains(s.workload_type)) {
    throw ScenarioError(ww.child("type").at(wl["type"]) + ": unknown workload '" + s.workload_type +
                        "'; valid workloads: " + join(wreg.names(), ", "));
  }
  ParamSpec wspec = wreg.get(s.workload_type, "workload").spec;
  wspec.text("type", s.workload_type, "workload kind");
  s.workload = wspec.resolve(wl, ww);
  s.workload_places[""] = ww.place(wl);
  for (const auto& kv : wl) {
    s.workload_places[kv.first.Scalar()] = ww.child(kv.first.Scalar()).place(kv.second);
  }
  // A trace replay's window, checked by the one check its workload runs when built, found at load.
  if (wspec.has("end_s")) {
    try {
      (void)replay_options_from(s.workload);
    } catch (const ScenarioError& e) {
      throw ScenarioError(located_workload_error(s, e.what()));
    }
  }
  // A trace is read when an arm runs; a missing one is the file's error, found at load.
  if (wspec.has("file")) {
    if (s.workload.get_string("file").empty()) {
      throw TraceError(ww.at(wl) + ": missing field 'file' (the trace file to replay)");
    }
    try {
      s.workload.set(
          "file", input_file_path(s.workload.get_string("file"), ww.child("file"), wl["file"],
                                  "trace file", "expected a trace of a format in docs/traces.md"));
    } catch (const ScenarioError& e) {
      throw TraceError(e.what());
    }
  }

  const YAML::Node arms = require(root, "arms", w, "a list of {name, policy, params}");
  if (!arms.IsSequence() || arms.size() == 0) {
    throw ScenarioError(w.child("arms").at(arms) + ": expected a non-empty list of arms");
  }
  const Params gateway = gateway_spec().resolve(root["gateway"], w.child("gateway"));
  check_gateway(gateway, root["gateway"], w.child("gateway"));
  // The scenario's own HPAs, checked where they are written, before any arm's overrides.
  const YAML::Node autoscaling = root["autoscaling"];
  resolve_hpas(autoscaling, w.child("autoscaling"), YAML::Node(), YamlWhere{}, s.fleet);
  s.client = client_spec().resolve(root["client"], w.child("client"));
  s.faults = parse_faults(root["faults"], w.child("faults"));
  std::set<std::string> names;
  for (size_t i = 0; i < arms.size(); ++i) {
    ArmSpec a = parse_arm(arms[i], w.child("arms").child(std::to_string(i)), gateway, autoscaling,
                          w.child("autoscaling"), s.fleet);
    if (!names.insert(a.name).second) {
      throw ScenarioError(w.child("arms").child(std::to_string(i)).at(arms[i]) +
                          ": duplicate arm name '" + a.name + "'");
    }
    const YAML::Node params = arms[i]["params"];
    a.params_where = w.child("arms")
                         .child(std::to_string(i))
                         .child("params")
                         .at(params.IsDefined() ? params : arms[i]);
    s.arms.push_back(std::move(a));
  }

  if (root["sim"].IsDefined()) {
    const ParamSpec sim_spec = ParamSpec().real(
        "horizon_s", 0, "stop the simulation at this time (0 = when the workload is done)", 0);
    s.horizon_s = sim_spec.resolve(root["sim"], w.child("sim")).get_double("horizon_s");
  }
  for (const FaultSpec& f : s.faults) {
    const double at_s = f.params.get_double("at_s");
    if (s.horizon_s > 0 && at_s >= s.horizon_s) {
      throw ScenarioError(f.at_where + ": " + fmt::format("{}", at_s) +
                          " s is at or after sim.horizon_s (" + fmt::format("{}", s.horizon_s) +
                          " s): the fault would never happen");
    }
  }

  if (const YAML::Node slo = root["slo"]; slo.IsDefined()) s.slo = parse_slo(slo, w.child("slo"));
  s.campaign = parse_campaign(root["campaign"], w.child("campaign"), s);

  if (const YAML::Node sw = root["sweep"]; sw.IsDefined()) {
    const YamlWhere sww = w.child("sweep");
    check_keys(sw, sww, {"vary"});
    const YAML::Node vary = require(sw, "vary", sww, "a map path -> [values]");
    if (!vary.IsMap()) {
      throw ScenarioError(sww.child("vary").at(vary) + ": expected a map path -> [values]");
    }
    for (const auto& kv : vary) {
      const std::string key = kv.first.as<std::string>();
      if (!kv.second.IsSequence() || kv.second.size() == 0) {
        throw ScenarioError(sww.child("vary").child(key).at(kv.second) +
                            ": expected a non-empty list of values");
      }
      std::vector<std::string> values;
      std::vector<std::string> where;
      const YamlWhere axis_where = sww.child("vary").child(key);
      for (const auto& v : kv.second) {
        values.emplace_back(flow_text(v));
        where.push_back(axis_where.child(std::to_string(values.size() - 1)).at(v));
      }
      s.sweep.emplace_back(key, std::move(values));
      s.sweep_where.push_back(std::move(where));
    }
  }

  if (const YAML::Node m = root["measured"]; m.IsDefined()) {
    const YamlWhere mw = w.child("measured");
    if (!m.IsMap()) throw ScenarioError(mw.at(m) + ": expected a map arm -> {metric: value}");
    for (const auto& arm : m) {
      const std::string arm_name = arm.first.as<std::string>();
      if (arm_name == "source") {
        s.measured_source = scalar_text(arm.second, mw.child("source"), "a text naming the source");
        continue;
      }
      if (!names.count(arm_name)) {
        throw ScenarioError(mw.child(arm_name).at(arm.first) + ": no arm named '" + arm_name +
                            "'; arms: " + join({names.begin(), names.end()}, ", "));
      }
      if (!arm.second.IsMap()) {
        throw ScenarioError(mw.child(arm_name).at(arm.second) +
                            ": expected a map metric -> measured value (fleetsim list metrics)");
      }
      for (const auto& metric : arm.second) {
        const std::string key = metric.first.as<std::string>();
        const auto valid = arm_metric_names();
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

}  // namespace

Scenario parse_scenario(const std::string& yaml_text, const std::string& label,
                        const std::vector<std::string>& overrides) {
  try {
    return parse_scenario_text(yaml_text, label, overrides);
  } catch (const YAML::Exception& e) {
    // A check that read a node the file does not have: still the file's error, not a crash.
    const std::string line = e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1);
    throw ScenarioError(label + line + ": " + e.msg + " (a field is missing or of the wrong kind)");
  }
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw ScenarioError(path + ": is a directory; expected a scenario YAML file");
  }
  return parse_scenario(read_input_file<ScenarioError>(path, "cannot open the scenario file"), path,
                        overrides);
}

}  // namespace fleetsim
