// One spec per configurable thing (policy, server, workload): each parameter has a type, a
// default and help text. YAML validation, `fleetsim describe` and the Python docstrings all come
// from the same spec, so they cannot drift apart.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace YAML {
class Node;
}

namespace fleetsim {

class Distribution;
using DistributionPtr = std::shared_ptr<const Distribution>;

enum class ParamType { kInt, kDouble, kBool, kString, kDistribution };

// What a string parameter names, when the spec alone cannot check it: the scenario loader checks
// it against the fleet (a pool) or the registry (a policy and that policy's parameters).
enum class ParamRef {
  kNone,
  kPool,      // a pool of the fleet (fleet.pools); "" may mean a default the policy documents
  kPolicy,    // a registered routing policy
  kParamsOf,  // a map of parameters of the policy named by the parameter `ref_param`, kept as
              // YAML flow text ("{tie_break: lowest_index}")
};

using ParamValue = std::variant<std::int64_t, double, bool, std::string, DistributionPtr>;

struct ParamDef {
  std::string name;
  ParamType type = ParamType::kInt;
  ParamValue default_value;
  std::string help;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // for strings: the valid values (empty = any)
  ParamRef ref = ParamRef::kNone;    // for strings: what the value names
  std::string ref_param = {};        // kParamsOf: the parameter naming the policy
};

// Where a YAML node came from, for error messages: "file:line: dotted.path".
struct YamlWhere {
  std::string file;
  std::string path;
  // What place() says of a node with no line (built, not read: a model's fields taken from its
  // hf_config file); empty: `file`.
  std::string unmarked = {};
  // The paths --set overrides wrote (PATH of each PATH=VALUE): a value with no line under one
  // of them is named as the override's, not the file's.
  std::shared_ptr<const std::vector<std::string>> overridden = {};
  std::string at(const YAML::Node& node) const;  // "file:line: path"
  // "file:line"; of a value an override wrote, "file: --set"; else `unmarked` or "file".
  std::string place(const YAML::Node& node) const;
  // Whether `node` (with no line) is a value an override wrote.
  bool set_by_override(const YAML::Node& node) const;
  YamlWhere child(const std::string& key) const;  // path + "." + key
};

// "place: what", or "file: --set what" for the place of a value an override wrote.
std::string located(const std::string& place, const std::string& what);

class Params {
 public:
  std::int64_t get_int(const std::string& name) const;
  double get_double(const std::string& name) const;
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const Distribution& get_distribution(const std::string& name) const;
  DistributionPtr get_distribution_ptr(const std::string& name) const;
  void set(const std::string& name, ParamValue v) { values_[name] = std::move(v); }
  const std::map<std::string, ParamValue>& values() const { return values_; }

 private:
  const ParamValue& get(const std::string& name) const;
  std::map<std::string, ParamValue> values_;
};

class ParamSpec {
 public:
  ParamSpec& integer(std::string name, std::int64_t def, std::string help,
                     double min = -std::numeric_limits<double>::infinity(),
                     double max = std::numeric_limits<double>::infinity());
  ParamSpec& real(std::string name, double def, std::string help,
                  double min = -std::numeric_limits<double>::infinity(),
                  double max = std::numeric_limits<double>::infinity());
  ParamSpec& boolean(std::string name, bool def, std::string help);
  ParamSpec& text(std::string name, std::string def, std::string help,
                  std::vector<std::string> choices = {});
  // A number (constant) or {dist: normal, mean: .., std: ..}; see sim/distribution.h.
  ParamSpec& distribution(std::string name, DistributionPtr def, std::string help);
  // A string naming a pool of the fleet, or a registered policy (checked by the scenario loader).
  ParamSpec& pool_name(std::string name, std::string def, std::string help);
  ParamSpec& policy_name(std::string name, std::string def, std::string help);
  // A YAML map of the parameters of the policy named by `policy_param` (e.g. inner_params of
  // inner_policy), stored as flow text; the scenario loader validates it against that policy's
  // spec, with file and line. parse_params_map() reads it back.
  ParamSpec& params_of(std::string name, std::string policy_param, std::string help);

  const std::vector<ParamDef>& defs() const { return defs_; }
  bool has(const std::string& name) const;

  // Defaults only.
  Params defaults() const;
  // Validates a YAML map (or a null node: all defaults). Unknown keys, wrong types and values out
  // of range throw ScenarioError naming file, line, field and the valid names.
  Params resolve(const YAML::Node& node, const YamlWhere& where) const;
  // Same, with `base` (e.g. scenario-wide values) in place of the spec's defaults.
  Params resolve(const YAML::Node& node, const YamlWhere& where, Params base) const;
  // Same, leaving the keys in `nested` (sub-sections the caller reads itself) alone; an unknown
  // key's error lists them beside the parameters.
  Params resolve(const YAML::Node& node, const YamlWhere& where, Params base,
                 const std::vector<std::string>& nested) const;
  // A human-readable table: name, type, default, help.
  std::string describe() const;

 private:
  std::vector<ParamDef> defs_;
};

std::string to_string(const ParamValue& v);
std::string to_string(ParamType t);
// The type as `describe` shows it: "int", ..., or "pool", "policy", "map" for references.
std::string type_label(const ParamDef& d);

// Resolves a kParamsOf value (YAML flow text) against `spec`. `label` names the map in errors
// (e.g. "inner_params of least_outstanding").
Params parse_params_map(const std::string& flow_text, const ParamSpec& spec,
                        const std::string& label);

}  // namespace fleetsim
