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

// The entry named `name` in `first` (a scenario's own definitions), else in `table`; the error
// lists both.
template <typename Entry>
const Entry& find_entry_in(const std::vector<Entry>& first, const std::vector<Entry>& table,
                           const std::string& kind, const std::string& name) {
  for (const auto& e : first) {
    if (name == e.name) return e;
  }
  for (const auto& e : table) {
    if (name == e.name) return e;
  }
  std::vector<std::string> valid = entry_names(first);
  for (auto& n : entry_names(table)) valid.push_back(std::move(n));
  throw UnknownNameError(kind, name, valid);
}

}  // namespace fleetsim
