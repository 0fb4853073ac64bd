// Lookup by name in a fixed table (GPU and model catalogs, arm metrics): the names in table order,
// and the entry named so or an UnknownNameError listing them.
#pragma once

#include <string>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {

template <typename Entry>
std::vector<std::string> entry_names(const std::vector<Entry>& table) {
  std::vector<std::string> names;
  names.reserve(table.size());
  for (const auto& e : table) names.emplace_back(e.name);
  return names;
}

// `kind` names the table in the error ("GPU", "model", "metric").
template <typename Entry>
const Entry& find_entry(const std::vector<Entry>& table, const std::string& kind,
                        const std::string& name) {
  for (const auto& e : table) {
    if (name == e.name) return e;
  }
  throw UnknownNameError(kind, name, entry_names(table));
}

}  // namespace fleetsim
