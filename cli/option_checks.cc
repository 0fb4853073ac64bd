#include "cli/option_checks.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <string>

namespace fleetsim::cli {
namespace {

std::string shown(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

CLI::Validator integer_in(std::int64_t min, std::int64_t max) {
  const std::string range = "[" + std::to_string(min) + ", " + std::to_string(max) + "]";
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        std::int64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
          return "expected an integer in " + range + ", got '" + text + "'";
        }
        return "";
      },
      "INT in " + range);
}

CLI::Validator number_in(double min, double max) {
  const std::string range = "[" + shown(min) + ", " + shown(max) + "]";
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [ptr, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < min ||
            v > max) {
          return "expected a number in " + range + ", got '" + text + "'";
        }
        return "";
      },
      "NUMBER in " + range);
}

namespace {

// A side of a window: empty gives `empty`; else a finite number in [0, 1e9] or nullopt.
std::optional<double> window_side(const std::string& text, double empty) {
  if (text.empty()) return empty;
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v) || v < 0 || v > 1e9) {
    return std::nullopt;
  }
  return v;
}

std::optional<std::pair<double, double>> parse_window(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const auto from = window_side(text.substr(0, colon), 0);
  const auto to = window_side(text.substr(colon + 1), HUGE_VAL);
  if (!from || !to || *from >= *to) return std::nullopt;
  return std::pair{*from, *to};
}

}  // namespace

CLI::Validator window_check() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        if (parse_window(text)) return "";
        return "expected FROM:TO in simulated seconds with 0 <= FROM < TO <= 1e9 (either may be "
               "left out, e.g. 30:90, 30:, :90), got '" +
               text + "'";
      },
      "FROM_S:TO_S");
}

std::pair<double, double> window_bounds(const std::string& text) {
  return parse_window(text).value_or(std::pair{0.0, HUGE_VAL});
}

CLI::Validator threads_check() { return integer_in(0, 4096); }

std::optional<std::string> path_given_twice(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> first;
  for (const std::string& set : sets) {
    const std::string path = set.substr(0, set.find('='));
    const auto [given, fresh] = first.emplace(path, set);
    if (!fresh) {
      return "--set " + path + ": given twice ('" + given->second + "' and '" + set +
             "'); give each field once";
    }
  }
  return std::nullopt;
}

}  // namespace fleetsim::cli
