// A scenario's own catalog entries (fleet.gpus, fleet.models): a non-empty list whose entries
// each have a name that neither the built-in catalog nor an earlier entry has.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

// `kind` names an entry in errors ("GPU", "model") and `listed_by` the command that lists the
// catalog's ("fleetsim list gpus"); `shape` is what an entry looks like, for the error of a
// list that is not one; `parse_one(node, where)` parses one entry.
template <typename Spec, typename ParseOne>
std::vector<Spec> parse_definitions(const YAML::Node& list, const YamlWhere& where,
                                    const std::string& kind, const std::string& listed_by,
                                    const std::string& shape,
                                    const std::vector<std::string>& catalog, ParseOne parse_one) {
  if (!list.IsSequence() || list.size() == 0) {
    throw ScenarioError(where.at(list) + ": expected a non-empty list of " + kind + "s, each " +
                        shape);
  }
  std::vector<Spec> out;
  std::set<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const YamlWhere w = where.child(std::to_string(i));
    Spec spec = parse_one(list[i], w);
    if (std::find(catalog.begin(), catalog.end(), spec.name) != catalog.end()) {
      throw ScenarioError(w.child("name").at(list[i]) + ": '" + spec.name + "' is a catalog " +
                          kind + " (" + listed_by + "); give yours another name");
    }
    if (!names.insert(spec.name).second) {
      throw ScenarioError(w.child("name").at(list[i]) + ": duplicate " + kind + " name '" +
                          spec.name + "'");
    }
    out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace fleetsim
