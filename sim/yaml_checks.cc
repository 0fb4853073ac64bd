#include "sim/yaml_checks.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim {
namespace {

constexpr int kMaxDepth = 64;
// Aliases of aliases make a small file expand exponentially; no real input comes near this.
constexpr std::size_t kMaxNodes = 1'000'000;

std::string line_of(const std::string& label, const YAML::Node& n) {
  return n.Mark().line >= 0 ? label + ":" + std::to_string(n.Mark().line + 1) : label;
}

void walk(const YAML::Node& node, const std::string& label, const std::string& path, int depth,
          std::size_t& visited) {
  if (++visited > kMaxNodes) {
    throw ScenarioError(line_of(label, node) + ": " + (path.empty() ? "<root>" : path) +
                        ": the document expands to more than " + std::to_string(kMaxNodes) +
                        " values (aliases of aliases?)");
  }
  if (depth > kMaxDepth) {
    throw ScenarioError(line_of(label, node) + ": " + (path.empty() ? "<root>" : path) +
                        ": nested deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) {
        throw ScenarioError(line_of(label, kv.first) + ": " + (path.empty() ? "<root>" : path) +
                            ": a key must be a plain name, not a map or a list");
      }
      const std::string key = kv.first.Scalar();
      const std::string child = path.empty() ? key : path + "." + key;
      if (!seen.insert(key).second) {
        throw ScenarioError(line_of(label, kv.first) + ": " + child +
                            ": given twice; give each field once");
      }
      walk(kv.second, label, child, depth + 1, visited);
    }
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) {
      walk(node[i], label, path + "." + std::to_string(i), depth + 1, visited);
    }
  }
}

// Where the first node of each document of a YAML text is, without building them. yaml-cpp
// 0.7's LoadAll loops for ever, allocating, on a document that starts with ',' (found by
// fuzzing: its parser returns without consuming the token, so every call yields another empty
// document at the same place), so the documents are counted here, three at most, and the one
// document is loaded by Load.
class DocumentStarts final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node_at(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node_at(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node_at(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node_at(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node_at(mark);
  }
  void OnMapEnd() override {}

  std::size_t documents = 0;
  std::vector<YAML::Mark> first_nodes;  // by document

 private:
  void node_at(const YAML::Mark& mark) {
    if (first_nodes.size() < documents) first_nodes.push_back(mark);
  }
};

// Refuses a text of more than one document, and the token yaml-cpp would stick on.
void require_one_document(const std::string& text, const std::string& label) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  if (!parser.HandleNextDocument(starts) || !parser.HandleNextDocument(starts)) return;
  const bool third = parser.HandleNextDocument(starts);
  if (starts.first_nodes.size() < 2) return;  // not a node yaml-cpp would build
  const YAML::Mark& second = starts.first_nodes[1];
  const std::string where = label + ":" + std::to_string(second.line + 1);
  if (third && starts.first_nodes.size() > 2 && starts.first_nodes[2].pos == second.pos) {
    throw ScenarioError(where +
                        ": invalid YAML: a ',' outside a flow list or map ([...] or {...})");
  }
  throw ScenarioError(where +
                      ": a second YAML document; expected one document (no '---' after "
                      "the first)");
}

}  // namespace

void check_yaml_keys(const YAML::Node& node, const std::string& label) {
  std::size_t visited = 0;
  walk(node, label, "", 0, visited);
}

YAML::Node parse_yaml(const std::string& text, const std::string& label) {
  // yaml-cpp recurses once per nesting level while parsing; refuse absurd nesting before it does.
  int depth = 0;
  int deepest = 0;
  for (const char c : text) {
    if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  if (deepest > kMaxDepth) {
    throw ScenarioError(label + ": flow collections nested deeper than " +
                        std::to_string(kMaxDepth) + " levels");
  }
  YAML::Node root;
  try {
    require_one_document(text, label);
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw ScenarioError(label + ":" + std::to_string(e.mark.line + 1) + ": nested deeper than " +
                        std::to_string(kMaxDepth) + " levels");
  } catch (const YAML::Exception& e) {
    throw ScenarioError(label + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  check_yaml_keys(root, label);
  return root;
}

template <typename T>
bool decode_decimal(const YAML::Node& node, T& out) {
  if (!node.IsScalar()) return false;
  std::string_view text = node.Scalar();
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const std::size_t digits = !text.empty() && text.front() == '-' ? 1 : 0;
  if (text.size() <= digits) return false;
  if (!std::all_of(text.begin() + static_cast<std::ptrdiff_t>(digits), text.end(),
                   [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, 10);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  out = v;
  return true;
}
template bool decode_decimal(const YAML::Node&, int&);
template bool decode_decimal(const YAML::Node&, long&);
template bool decode_decimal(const YAML::Node&, long long&);
template bool decode_decimal(const YAML::Node&, unsigned long&);
template bool decode_decimal(const YAML::Node&, unsigned long long&);

YAML::Node load_yaml_file(const std::string& path) {
  return parse_yaml(read_input_file<ScenarioError>(path, "cannot open the file"), path);
}

void check_keys(const YAML::Node& node, const YamlWhere& where,
                const std::vector<std::string>& valid) {
  std::string list;
  for (const auto& v : valid) list += (list.empty() ? "" : ", ") + v;
  if (!node.IsMap()) throw ScenarioError(where.at(node) + ": expected a map with fields " + list);
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    if (std::find(valid.begin(), valid.end(), key) == valid.end()) {
      throw ScenarioError(where.child(key).at(kv.first) + ": unknown field; valid fields: " + list);
    }
  }
}

std::string scalar_text(const YAML::Node& node, const YamlWhere& where,
                        const std::string& expected) {
  if (!node.IsScalar()) throw ScenarioError(where.at(node) + ": expected " + expected);
  return node.Scalar();
}

std::string flow_text(const YAML::Node& node) {
  YAML::Node copy = YAML::Clone(node);
  copy.SetStyle(YAML::EmitterStyle::Flow);
  YAML::Emitter out;
  out << copy;
  return out.c_str();
}

}  // namespace fleetsim
