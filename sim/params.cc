#include "sim/params.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

std::string YamlWhere::place(const YAML::Node& node) const {
  std::string loc = file.empty() ? "<scenario>" : file;
  if (node.IsDefined() && node.Mark().line >= 0) {
    return loc + ":" + std::to_string(node.Mark().line + 1);
  }
  if (!unmarked.empty()) return unmarked;
  return set_by_override(node) ? loc + ": --set" : loc;
}

bool YamlWhere::set_by_override(const YAML::Node& node) const {
  if (!node.IsDefined() || node.Mark().line >= 0 || !overridden) return false;
  return std::any_of(overridden->begin(), overridden->end(),
                     [&](const std::string& p) { return path == p || path.starts_with(p + "."); });
}

std::string located(const std::string& place, const std::string& what) {
  return place + (place.ends_with(": --set") ? " " : ": ") + what;
}

std::string YamlWhere::at(const YAML::Node& node) const {
  return located(place(node), path.empty() ? "<root>" : path);
}

YamlWhere YamlWhere::child(const std::string& key) const {
  return {file, path.empty() ? key : path + "." + key, unmarked, overridden};
}

std::string to_string(ParamType t) {
  switch (t) {
    case ParamType::kInt:
      return "int";
    case ParamType::kDouble:
      return "float";
    case ParamType::kBool:
      return "bool";
    case ParamType::kString:
      return "string";
    case ParamType::kDistribution:
      return "distribution";
  }
  return "?";
}

std::string to_string(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<T, DistributionPtr>) {
          return x ? x->describe() : "none";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream os;
          os << x;
          return os.str();
        } else {
          return std::to_string(x);
        }
      },
      v);
}

const ParamValue& Params::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InternalError("parameter '" + name + "' is not in the spec");
  return it->second;
}

std::int64_t Params::get_int(const std::string& name) const {
  return std::get<std::int64_t>(get(name));
}
double Params::get_double(const std::string& name) const { return std::get<double>(get(name)); }
bool Params::get_bool(const std::string& name) const { return std::get<bool>(get(name)); }
const std::string& Params::get_string(const std::string& name) const {
  return std::get<std::string>(get(name));
}
const Distribution& Params::get_distribution(const std::string& name) const {
  return *get_distribution_ptr(name);
}
DistributionPtr Params::get_distribution_ptr(const std::string& name) const {
  return std::get<DistributionPtr>(get(name));
}

ParamSpec& ParamSpec::integer(std::string name, std::int64_t def, std::string help, double min,
                              double max) {
  // Counts are stored as 32-bit integers downstream; a larger value must be refused, not cut.
  max = std::min(max, static_cast<double>(std::numeric_limits<std::int32_t>::max()));
  defs_.push_back({std::move(name), ParamType::kInt, def, std::move(help), min, max, {}});
  return *this;
}
ParamSpec& ParamSpec::real(std::string name, double def, std::string help, double min, double max) {
  // A parameter named *_ms or *_s is a duration (the project's naming rule; the few rates named
  // *_per_s are capped far above any real value too): cap it within the simulated clock's reach,
  // so the error names the field instead of the clock overflowing later.
  const auto ends_with = [&](const char* suffix) {
    const std::string_view n(name);
    const std::string_view x(suffix);
    return n.size() >= x.size() && n.substr(n.size() - x.size()) == x;
  };
  if (ends_with("_ms")) {
    max = std::min(max, 1e12);  // ~31.7 years
  } else if (ends_with("_s")) {
    max = std::min(max, 1e9);  // ~31.7 years
  }
  defs_.push_back({std::move(name), ParamType::kDouble, def, std::move(help), min, max, {}});
  return *this;
}
ParamSpec& ParamSpec::boolean(std::string name, bool def, std::string help) {
  ParamDef d;
  d.name = std::move(name);
  d.type = ParamType::kBool;
  d.default_value = def;
  d.help = std::move(help);
  defs_.push_back(std::move(d));
  return *this;
}
ParamSpec& ParamSpec::text(std::string name, std::string def, std::string help,
                           std::vector<std::string> choices) {
  ParamDef d;
  d.name = std::move(name);
  d.type = ParamType::kString;
  d.default_value = std::move(def);
  d.help = std::move(help);
  d.choices = std::move(choices);
  defs_.push_back(std::move(d));
  return *this;
}

ParamSpec& ParamSpec::distribution(std::string name, DistributionPtr def, std::string help) {
  ParamDef d;
  d.name = std::move(name);
  d.type = ParamType::kDistribution;
  d.default_value = std::move(def);
  d.help = std::move(help);
  defs_.push_back(std::move(d));
  return *this;
}

ParamSpec& ParamSpec::pool_name(std::string name, std::string def, std::string help) {
  text(std::move(name), std::move(def), std::move(help));
  defs_.back().ref = ParamRef::kPool;
  return *this;
}

ParamSpec& ParamSpec::policy_name(std::string name, std::string def, std::string help) {
  text(std::move(name), std::move(def), std::move(help));
  defs_.back().ref = ParamRef::kPolicy;
  return *this;
}

ParamSpec& ParamSpec::params_of(std::string name, std::string policy_param, std::string help) {
  text(std::move(name), "{}", std::move(help));
  defs_.back().ref = ParamRef::kParamsOf;
  defs_.back().ref_param = std::move(policy_param);
  return *this;
}

std::string type_label(const ParamDef& d) {
  switch (d.ref) {
    case ParamRef::kPool:
      return "pool";
    case ParamRef::kPolicy:
      return "policy";
    case ParamRef::kParamsOf:
      return "map";
    case ParamRef::kNone:
      break;
  }
  return to_string(d.type);
}

namespace {

// A copy of a parsed node without its marks, so errors do not cite a line of a text that was
// never a file.
YAML::Node without_marks(const YAML::Node& n) {
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    for (const auto& kv : n) out[kv.first.Scalar()] = without_marks(kv.second);
    return out;
  }
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (const auto& v : n) out.push_back(without_marks(v));
    return out;
  }
  if (n.IsScalar()) return YAML::Node(n.Scalar());
  return YAML::Node();
}

}  // namespace

Params parse_params_map(const std::string& flow_text, const ParamSpec& spec,
                        const std::string& label) {
  YAML::Node node;
  try {
    node = YAML::Load(flow_text.empty() ? std::string("{}") : flow_text);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(label + ": invalid YAML '" + flow_text + "': " + e.msg);
  }
  if (node.IsNull() || (node.IsScalar() && node.Scalar().empty())) {
    node = YAML::Node(YAML::NodeType::Map);
  }
  if (!node.IsMap()) throw ScenarioError(label + ": expected a map of parameters");
  // "label: key: what was wrong", with no line.
  return spec.resolve(without_marks(node), YamlWhere{label, ""});
}

bool ParamSpec::has(const std::string& name) const {
  return std::any_of(defs_.begin(), defs_.end(), [&](const ParamDef& d) { return d.name == name; });
}

Params ParamSpec::defaults() const {
  Params p;
  for (const auto& d : defs_) p.set(d.name, d.default_value);
  return p;
}

namespace {

std::string range_text(const ParamDef& d) {
  std::ostringstream os;
  // Integer bounds in full (2147483647, not 2.14748e+09); real ones as the shortest text.
  if (d.type == ParamType::kInt) os << std::fixed << std::setprecision(0);
  if (std::isfinite(d.min) && std::isfinite(d.max)) {
    os << " in [" << d.min << ", " << d.max << "]";
  } else if (std::isfinite(d.min)) {
    os << " >= " << d.min;
  } else if (std::isfinite(d.max)) {
    os << " <= " << d.max;
  }
  return os.str();
}

ParamValue parse_value(const ParamDef& d, const YAML::Node& node, const YamlWhere& where) {
  if (d.type == ParamType::kDistribution) return parse_distribution(node, where);
  if (d.ref == ParamRef::kParamsOf) {
    // A map of another policy's parameters, kept as flow text; checked by the scenario loader.
    if (node.IsNull()) return std::string("{}");
    YAML::Node map = node;
    if (node.IsScalar()) {  // "{a: 1}" written as a string (--set passes flow text through)
      try {
        map = YAML::Load(node.Scalar());
      } catch (const YAML::Exception&) {
        map = YAML::Node();
      }
    }
    if (!map.IsMap()) {
      throw ScenarioError(where.at(node) +
                          ": expected a map of parameters, e.g. {tie_break: lowest_index}");
    }
    return flow_text(map);
  }
  const std::string expected = "expected " + to_string(d.type) + range_text(d);
  if (!node.IsScalar()) {
    throw ScenarioError(where.at(node) + ": " + expected + ", got " +
                        (node.IsMap()        ? "a map"
                         : node.IsSequence() ? "a list"
                                             : "nothing (an empty value or ~)"));
  }
  const std::string raw = node.Scalar();
  auto fail = [&]() {
    throw ScenarioError(where.at(node) + ": " + expected + ", got '" + raw + "'");
  };
  switch (d.type) {
    case ParamType::kInt: {
      std::int64_t v = 0;
      if (!decode_decimal(node, v)) {
        // Accept 1e6-style integers written as floats only when exact.
        double f = 0;
        if (!YAML::convert<double>::decode(node, f) || std::floor(f) != f) fail();
        if (f < d.min || f > d.max) fail();  // before the cast, which a huge f would overflow
        v = static_cast<std::int64_t>(f);
      }
      if (static_cast<double>(v) < d.min || static_cast<double>(v) > d.max) fail();
      return v;
    }
    case ParamType::kDouble: {
      double v = 0;
      if (!YAML::convert<double>::decode(node, v) || !std::isfinite(v)) fail();
      if (v < d.min || v > d.max) fail();
      return v;
    }
    case ParamType::kBool: {
      bool v = false;
      if (!YAML::convert<bool>::decode(node, v)) fail();
      return v;
    }
    case ParamType::kString: {
      if (!d.choices.empty() &&
          std::find(d.choices.begin(), d.choices.end(), raw) == d.choices.end()) {
        throw ScenarioError(where.at(node) + ": unknown value '" + raw +
                            "'; valid values: " + join(d.choices, ", "));
      }
      return raw;
    }
    case ParamType::kDistribution:
      break;
  }
  fail();
  return {};
}

}  // namespace

Params ParamSpec::resolve(const YAML::Node& node, const YamlWhere& where) const {
  return resolve(node, where, defaults());
}

Params ParamSpec::resolve(const YAML::Node& node, const YamlWhere& where, Params base) const {
  return resolve(node, where, std::move(base), {});
}

Params ParamSpec::resolve(const YAML::Node& node, const YamlWhere& where, Params base,
                          const std::vector<std::string>& nested) const {
  Params p = std::move(base);
  if (!node.IsDefined() || node.IsNull()) return p;
  if (!node.IsMap()) throw ScenarioError(where.at(node) + ": expected a map of parameters");
  for (const auto& kv : node) {
    const std::string key = kv.first.as<std::string>();
    if (std::find(nested.begin(), nested.end(), key) != nested.end()) continue;
    auto it =
        std::find_if(defs_.begin(), defs_.end(), [&](const ParamDef& d) { return d.name == key; });
    if (it == defs_.end()) {
      std::vector<std::string> names;
      for (const auto& d : defs_) names.push_back(d.name);
      names.insert(names.end(), nested.begin(), nested.end());
      throw ScenarioError(where.child(key).at(kv.first) +
                          ": unknown parameter; valid parameters: " +
                          (names.empty() ? std::string("(none)") : join(names, ", ")));
    }
    p.set(key, parse_value(*it, kv.second, where.child(key)));
  }
  return p;
}

std::string ParamSpec::describe() const {
  std::ostringstream os;
  for (const auto& d : defs_) {
    os << "  " << d.name << " (" << type_label(d) << ", default " << to_string(d.default_value)
       << range_text(d) << ")";
    if (!d.choices.empty()) os << " one of: " << join(d.choices, ", ");
    os << "\n      " << d.help << "\n";
  }
  return os.str();
}

}  // namespace fleetsim
