#include "sim/yaml_checks.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "sim/errors.h"

namespace fleetsim {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_yaml(text, "f.yaml");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(YamlChecks, DuplicateKeysAreErrorsWithTheirLine) {
  EXPECT_EQ(error_of("fleet:\n  pods: 2\n  pods: -3\n"),
            "f.yaml:3: fleet.pods: given twice; give each field once");
  EXPECT_EQ(error_of("a: 1\na: 2\n"), "f.yaml:2: a: given twice; give each field once");
  EXPECT_NE(error_of("arms:\n  - {name: x, name: y}\n").find("arms.0.name: given twice"),
            std::string::npos);
}

TEST(YamlChecks, KeysMustBePlainNames) {
  EXPECT_NE(error_of("? [a, b]\n: 1\n").find("a key must be a plain name"), std::string::npos);
}

TEST(YamlChecks, SyntaxErrorsAndDeepNestingNameTheFile) {
  EXPECT_NE(error_of("a: [1,\n").find("f.yaml:"), std::string::npos);
  EXPECT_NE(error_of(std::string(200, '[') + std::string(200, ']')).find("nested deeper"),
            std::string::npos);
  EXPECT_NO_THROW(parse_yaml("a: 1\nb: [1, 2]\nc: {d: 3}\n", "ok.yaml"));
}

TEST(YamlChecks, BlockNestingPastTheParsersGuardNamesTheLimit) {
  std::string text;
  for (int i = 0; i < 600; ++i) text += std::string(static_cast<size_t>(i) * 2, ' ') + "a:\n";
  EXPECT_NE(error_of(text).find("nested deeper than 64 levels"), std::string::npos)
      << error_of(text);
}

TEST(YamlChecks, OneDocumentPerFile) {
  EXPECT_EQ(error_of("a: 1\n---\nb: 2\n"),
            "f.yaml:3: a second YAML document; expected one document (no '---' after the first)");
  EXPECT_NO_THROW(parse_yaml("---\na: 1\n", "ok.yaml"));
  EXPECT_NO_THROW(parse_yaml("", "empty.yaml"));
}

// yaml-cpp 0.7's LoadAll never returns on these (found by fuzzing): each is an error at once.
TEST(YamlChecks, ACommaStartingADocumentIsAnErrorNotAnEndlessLoop) {
  for (const char* text : {",", " ,\n", "# c\n,", "---\n,", "!!str ,", "&a ,", ", a"}) {
    EXPECT_NE(error_of(text).find("invalid YAML: a ',' outside a flow list or map"),
              std::string::npos)
        << text << ": " << error_of(text);
  }
  EXPECT_NE(error_of("a: 1\n---\n,").find("f.yaml:3: invalid YAML: a ','"), std::string::npos)
      << error_of("a: 1\n---\n,");
}

TEST(YamlChecks, AliasesThatExpandExponentiallyAreRefused) {
  // Nine levels of ten aliases each: a billion values from ten lines.
  std::string text = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    const char prev = static_cast<char>(c - 1);
    text += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) text += std::string(i ? ", " : "") + "*" + prev;
    text += "]\n";
  }
  EXPECT_NE(error_of(text).find("expands to more than 1000000 values"), std::string::npos);
  EXPECT_NO_THROW(parse_yaml("a: &a {x: 1}\nb: *a\n", "ok.yaml"));
}

TEST(YamlChecks, UnreadableFilesAreErrors) {
  EXPECT_THROW(load_yaml_file("/nonexistent/x.yaml"), ScenarioError);
  EXPECT_THROW(load_yaml_file("/tmp"), ScenarioError);
}

// A sweep's values and a map parameter are kept as one line of YAML, whatever style the file
// wrote them in (an emitter's YAML::Flow alone left parsed block collections multi-line).
TEST(YamlChecks, FlowTextIsOneLineWhateverTheFilesStyle) {
  const YAML::Node n = parse_yaml("a:\n  - - 1\n    - 2\n  - x: 1\n    y: [3, 4]\n  - abc\n", "f");
  EXPECT_EQ(flow_text(n["a"][0]), "[1, 2]");
  EXPECT_EQ(flow_text(n["a"][1]), "{x: 1, y: [3, 4]}");
  EXPECT_EQ(flow_text(n["a"][2]), "abc");
  EXPECT_EQ(flow_text(n), "{a: [[1, 2], {x: 1, y: [3, 4]}, abc]}");
}

TEST(YamlChecks, CheckKeysListsTheValidFields) {
  const YAML::Node n = parse_yaml("a: 1\nzz: 2\n", "f.yaml");
  try {
    check_keys(n, {"f.yaml", ""}, {"a", "b"});
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), "f.yaml:2: zz: unknown field; valid fields: a, b");
  }
}

}  // namespace
}  // namespace fleetsim
