// Checks every YAML input (scenario, validation file, calibration file, --set value) goes
// through before its fields are read, so that malformed YAML is reported with its file and line
// instead of as yaml-cpp's own text, and so that nothing is silently dropped.
#pragma once

#include <string>
#include <vector>

#include "sim/params.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// Parses YAML text; `label` (a file name, or "--set PATH") names it in errors. Throws
// ScenarioError with the line for syntax errors, keys that are not plain scalars, keys given
// twice in one map (yaml-cpp keeps one of them silently), and nesting deeper than 64 levels.
YAML::Node parse_yaml(const std::string& text, const std::string& label);
// Same, reading `path`; a file that cannot be read is an error naming it.
YAML::Node load_yaml_file(const std::string& path);

// One rule for every integer field, YAML 1.2's core schema for decimals: an optional sign and
// decimal digits, leading zeros included ("017" is 17, where yaml-cpp's own conversion reads
// YAML 1.1's octal 15). Hexadecimal and octal forms are not integers here. False when `node`
// is not such a scalar or the value does not fit T.
template <typename T>
bool decode_decimal(const YAML::Node& node, T& out);
// The key checks of parse_yaml, for a node built another way.
void check_yaml_keys(const YAML::Node& node, const std::string& label);

// `node` as one line of flow YAML ("[1, 2]", "{dist: uniform, low: 1}"); a scalar as written.
// (An emitter's YAML::Flow does not reach a parsed node, which keeps its own block style.)
std::string flow_text(const YAML::Node& node);

// `node` must be a map whose keys are all in `valid`.
void check_keys(const YAML::Node& node, const YamlWhere& where,
                const std::vector<std::string>& valid);
// `node` must be a scalar; returns its text.
std::string scalar_text(const YAML::Node& node, const YamlWhere& where,
                        const std::string& expected);

}  // namespace fleetsim
