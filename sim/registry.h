// A registry of named plug-ins. Each plug-in registers itself next to its code with a static
// Registrar, so adding one never means editing a list elsewhere. Libraries holding registrars are
// CMake OBJECT libraries, so the linker keeps them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/params.h"

namespace fleetsim {

template <typename Base, typename... Args>
class Registry {
 public:
  using Factory = std::function<std::unique_ptr<Base>(const Params&, Args...)>;
  struct Entry {
    std::string name;
    std::string description;
    ParamSpec spec;
    Factory factory;
  };

  static Registry& instance() {
    static Registry r;
    return r;
  }

  void add(Entry e) { entries_[e.name] = std::move(e); }
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }

  const Entry& get(const std::string& name, const std::string& kind) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) throw UnknownNameError(kind, name, names());
    return it->second;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  const std::map<std::string, Entry>& entries() const { return entries_; }

 private:
  std::map<std::string, Entry> entries_;
};

}  // namespace fleetsim
