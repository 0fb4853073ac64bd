// A registry of named plug-ins. Each plug-in registers itself next to its code with a static
// Registrar, so adding one never means editing a list elsewhere. Libraries holding registrars are
// CMake OBJECT libraries, so the linker keeps them.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
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

  // Python registers policies at any time, also while other threads run arms that build them,
  // and a factory may itself register (a policy's constructor): so readers get copies, and an
  // entry replaced meanwhile lives on in the copy whose factory is running.
  void add(Entry e) {
    const std::unique_lock lock(mutex_);
    entries_[e.name] = std::move(e);
  }
  bool contains(const std::string& name) const {
    const std::shared_lock lock(mutex_);
    return entries_.count(name) > 0;
  }

  Entry get(const std::string& name, const std::string& kind) const {
    {
      const std::shared_lock lock(mutex_);
      auto it = entries_.find(name);
      if (it != entries_.end()) return it->second;
    }
    throw UnknownNameError(kind, name, names());
  }

  std::vector<std::string> names() const {
    const std::shared_lock lock(mutex_);
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }
  std::map<std::string, Entry> entries() const {
    const std::shared_lock lock(mutex_);
    return entries_;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace fleetsim
