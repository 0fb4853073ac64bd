#include "sim/errors.h"

#include <cmath>
#include <sstream>

namespace fleetsim {

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

std::vector<std::string> split_trimmed(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, sep);) {
    const auto b = part.find_first_not_of(" \t\n");
    out.push_back(b == std::string::npos ? ""
                                         : part.substr(b, part.find_last_not_of(" \t\n") - b + 1));
  }
  return out;
}

bool parse_finite(const std::string& text, double& out) {
  if (text.empty()) return false;
  std::istringstream is(text);
  is >> out;
  return !is.fail() && is.eof() && std::isfinite(out);
}

UnknownNameError::UnknownNameError(const std::string& kind, const std::string& name,
                                   const std::vector<std::string>& valid)
    : Error("unknown " + kind + " '" + name + "'; valid " +
            (kind.ends_with("y") ? kind.substr(0, kind.size() - 1) + "ies" : kind + "s") + ": " +
            join(valid, ", ")) {}

}  // namespace fleetsim
