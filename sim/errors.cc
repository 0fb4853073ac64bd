#include "sim/errors.h"

namespace fleetsim {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

UnknownNameError::UnknownNameError(const std::string& kind, const std::string& name,
                                   const std::vector<std::string>& valid)
    : Error("unknown " + kind + " '" + name + "'; valid " +
            (kind.ends_with("y") ? kind.substr(0, kind.size() - 1) + "ies" : kind + "s") + ": " +
            join(valid, ", ")) {}

}  // namespace fleetsim
