#include "sim/distribution.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

const YamlWhere kWhere{"x.yaml", "workload.question_tokens"};

DistributionPtr parse(const std::string& yaml) {
  return parse_distribution(YAML::Load(yaml), kWhere);
}

struct Moments {
  double mean = 0;
  double std = 0;
  double min = 0;
  double max = 0;
};

Moments sample(const Distribution& d, int n = 20000, std::uint64_t seed = 17) {
  Rng rng = make_rng(seed, "distribution-test");
  double sum = 0;
  double sum_sq = 0;
  Moments m{0, 0, INFINITY, -INFINITY};
  for (int i = 0; i < n; ++i) {
    const double x = d.sample(rng);
    sum += x;
    sum_sq += x * x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean = sum / n;
  m.std = std::sqrt(std::max(0.0, sum_sq / n - m.mean * m.mean));
  return m;
}

// The message of the ScenarioError `yaml` raises.
std::string error_of(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ScenarioError for: " << yaml;
  return "";
}

TEST(Distribution, NamesAreTheRegisteredKinds) {
  EXPECT_EQ(distribution_names(), (std::vector<std::string>{"constant", "empirical", "exponential",
                                                            "lognormal", "normal", "uniform"}));
}

TEST(Distribution, PlainNumberIsConstant) {
  const auto d = parse("42");
  Rng rng = make_rng(1, "x");
  for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(d->sample(rng), 42.0);
  EXPECT_DOUBLE_EQ(d->mean(), 42.0);
  EXPECT_DOUBLE_EQ(parse("2.5")->mean(), 2.5);
}

TEST(Distribution, ConstantKind) {
  const auto d = parse("{dist: constant, value: 7}");
  Rng rng = make_rng(1, "x");
  EXPECT_DOUBLE_EQ(d->sample(rng), 7.0);
  EXPECT_DOUBLE_EQ(d->mean(), 7.0);
  EXPECT_DOUBLE_EQ(constant_distribution(3)->mean(), 3.0);
}

TEST(Distribution, Uniform) {
  const auto d = parse("{dist: uniform, low: 10, high: 30}");
  EXPECT_DOUBLE_EQ(d->mean(), 20.0);
  const Moments m = sample(*d);
  EXPECT_GE(m.min, 10.0);
  EXPECT_LT(m.max, 30.0);
  EXPECT_NEAR(m.mean, 20.0, 0.2);
  EXPECT_NEAR(m.std, 20.0 / std::sqrt(12.0), 0.1);  // (high - low) / sqrt(12) = 5.77
}

TEST(Distribution, Normal) {
  const auto d = parse("{dist: normal, mean: 500, std: 100}");
  EXPECT_DOUBLE_EQ(d->mean(), 500.0);
  const Moments m = sample(*d);
  EXPECT_NEAR(m.mean, 500.0, 5.0);  // 1 %
  EXPECT_NEAR(m.std, 100.0, 3.0);   // 3 %
}

TEST(Distribution, LogNormalMatchesTheGivenMeanAndStd) {
  // mean and std are those of the variable, not of its log.
  const auto d = parse("{dist: lognormal, mean: 1000, std: 500}");
  EXPECT_DOUBLE_EQ(d->mean(), 1000.0);
  const Moments m = sample(*d);
  EXPECT_GT(m.min, 0.0);
  EXPECT_NEAR(m.mean, 1000.0, 30.0);  // 3 %
  EXPECT_NEAR(m.std, 500.0, 25.0);    // 5 %
}

TEST(Distribution, Exponential) {
  const auto d = parse("{dist: exponential, mean: 250}");
  EXPECT_DOUBLE_EQ(d->mean(), 250.0);
  const Moments m = sample(*d);
  EXPECT_GE(m.min, 0.0);
  EXPECT_NEAR(m.mean, 250.0, 7.5);  // 3 %
  EXPECT_NEAR(m.std, 250.0, 10.0);  // std = mean for an exponential
}

TEST(Distribution, MinAndMaxClampEveryDraw) {
  const auto d = parse("{dist: normal, mean: 0, std: 10, min: -1, max: 1}");
  const Moments m = sample(*d, 2000);
  // Nearly every draw lands outside [-1, 1], so both ends are reached exactly.
  EXPECT_DOUBLE_EQ(m.min, -1.0);
  EXPECT_DOUBLE_EQ(m.max, 1.0);
  const auto e = parse("{dist: exponential, mean: 100, max: 50}");
  EXPECT_DOUBLE_EQ(sample(*e, 2000).max, 50.0);
  const auto u = parse("{dist: uniform, low: 0, high: 100, min: 90}");
  EXPECT_DOUBLE_EQ(sample(*u, 2000).min, 90.0);
}

TEST(Distribution, SameSeedSameDraws) {
  const auto d = parse("{dist: lognormal, mean: 100, std: 80}");
  Rng a = make_rng(5, "s");
  Rng b = make_rng(5, "s");
  for (int i = 0; i < 100; ++i) EXPECT_EQ(d->sample(a), d->sample(b));
}

TEST(Distribution, SampleTokensRoundsAndHasAFloor) {
  Rng rng = make_rng(1, "x");
  EXPECT_EQ(sample_tokens(*constant_distribution(7.4), rng), 7);
  EXPECT_EQ(sample_tokens(*constant_distribution(7.5), rng), 8);
  EXPECT_EQ(sample_tokens(*constant_distribution(-3), rng), 1);  // default floor 1
  EXPECT_EQ(sample_tokens(*constant_distribution(0), rng, 0), 0);
  EXPECT_EQ(sample_tokens(*constant_distribution(1e12), rng), 10000000);  // capped at kMaxTokens
  EXPECT_EQ(sample_int(*constant_distribution(1e12), rng, 1, 50), 50);
  EXPECT_EQ(sample_int(*constant_distribution(-1e12), rng, 3, 50), 3);
  EXPECT_EQ(sample_int(*constant_distribution(NAN), rng, 3, 50), 3);  // not a cast of NaN
}

TEST(Distribution, NormalDrawsAreTheStandardLibrarys) {
  // Normal scales a standard normal by hand (to allow std 0): the draws must not move, or every
  // scenario's results would.
  const auto d = parse("{dist: normal, mean: 500, std: 100}");
  Rng a = make_rng(3, "n");
  Rng b = make_rng(3, "n");
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(d->sample(a), std::normal_distribution<double>(500, 100)(b));
  }
  const auto flat = parse("{dist: normal, mean: 42, std: 0}");
  EXPECT_DOUBLE_EQ(sample(*flat, 100).min, 42.0);
  EXPECT_DOUBLE_EQ(sample(*flat, 100).max, 42.0);
}

TEST(Distribution, SupportIsWhereEveryDrawLies) {
  auto support = [](const std::string& yaml) {
    const Support s = parse(yaml)->support();
    return std::make_pair(s.lo, s.hi);
  };
  using P = std::pair<double, double>;
  EXPECT_EQ(support("7"), (P{7, 7}));
  EXPECT_EQ(support("{dist: uniform, low: 10, high: 30}"), (P{10, 30}));
  EXPECT_EQ(support("{dist: uniform, low: 10, high: 30, max: 20}"), (P{10, 20}));
  EXPECT_EQ(support("{dist: normal, mean: 5, std: 1}"), (P{-INFINITY, INFINITY}));
  EXPECT_EQ(support("{dist: normal, mean: 5, std: 1, min: 0}"), (P{0, INFINITY}));
  EXPECT_EQ(support("{dist: normal, mean: 5, std: 0}"), (P{5, 5}));
  EXPECT_EQ(support("{dist: lognormal, mean: 5, std: 1}"), (P{0, INFINITY}));
  EXPECT_EQ(support("{dist: exponential, mean: 5, max: 9}"), (P{0, 9}));
}

TEST(Distribution, UniformLowAboveHighIsAnError) {
  const std::string msg = error_of("\n{dist: uniform, low: 300, high: 100}");
  EXPECT_NE(msg.find("x.yaml:2: workload.question_tokens: uniform low 300 is above high 100; "
                     "expected low <= high"),
            std::string::npos)
      << msg;
  EXPECT_NE(error_of("{dist: uniform, high: -1}").find("low 0 is above high -1"),
            std::string::npos);
  EXPECT_NE(error_of("{dist: uniform, low: -1e308, high: 1e308}").find("finite high - low"),
            std::string::npos);
  EXPECT_EQ(parse("{dist: uniform, low: 5, high: 5}")->mean(), 5.0);  // a point is fine
}

TEST(Distribution, MinAboveMaxIsAnError) {
  const std::string msg = error_of("{dist: normal, mean: 5, min: 10, max: 1}");
  EXPECT_NE(msg.find("x.yaml:1: workload.question_tokens: min 10 is above max 1; expected min <= "
                     "max"),
            std::string::npos)
      << msg;
}

// The message require_tokens raises for `yaml`, or "" when it accepts it.
std::string range_error(const std::string& yaml, std::int32_t min_tokens) {
  try {
    require_tokens(*parse(yaml), "unused", min_tokens);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(Distribution, RequireTokensNamesTheLineFieldAndRange) {
  EXPECT_EQ(range_error("\n\n-5", 1),
            "x.yaml:3: workload.question_tokens: -5 is out of range; expected tokens (at most 10M "
            "per segment, beyond any model's context window) in [1, 10000000]");
  EXPECT_NE(range_error("0", 1).find("x.yaml:1: workload.question_tokens: 0 is out of range"),
            std::string::npos);
  EXPECT_NE(range_error("1e12", 0).find("1000000000000 is out of range"), std::string::npos);
  EXPECT_NE(range_error("1e308", 0).find("in [0, 10000000]"), std::string::npos);
  // Every draw invalid.
  EXPECT_NE(range_error("{dist: uniform, low: -10, high: -1}", 0)
                .find("x.yaml:1: workload.question_tokens: every draw lies in [-10, -1], out of "
                      "range"),
            std::string::npos);
  EXPECT_NE(range_error("{dist: normal, mean: 9, std: 3, max: 0.4}", 1).find("every draw lies"),
            std::string::npos);
  // A bounded support above the maximum, or a mean outside the range.
  EXPECT_NE(range_error("{dist: uniform, low: 1, high: 2e7}", 1)
                .find("draws reach 20000000, above the maximum"),
            std::string::npos);
  EXPECT_NE(range_error("{dist: normal, mean: 100, std: 10, max: 1e8}", 1).find("draws reach"),
            std::string::npos);
  EXPECT_NE(range_error("{dist: lognormal, mean: 1e8, std: 10}", 1)
                .find("the mean 100000000 is out of range"),
            std::string::npos);
  EXPECT_NE(range_error("{dist: normal, mean: -50, std: 10}", 0).find("the mean -50"),
            std::string::npos);
}

TEST(Distribution, RequireTokensAcceptsWhatClampingFixes) {
  // In range, at the limits, or partly below the floor (the documented clamp of a draw), or
  // with a tail past the maximum (clamped when drawn).
  for (const char* ok :
       {"1", "10000000", "{dist: uniform, low: -5, high: 100}",
        "{dist: normal, mean: 500, std: 400}", "{dist: exponential, mean: 2000}",
        "{dist: lognormal, mean: 9000000, std: 9000000}", "{dist: uniform, low: 0, high: 1e7}"}) {
    EXPECT_EQ(range_error(ok, 1), "") << ok;
  }
  EXPECT_EQ(range_error("0", 0), "");
}

TEST(Distribution, RequireRangeOfADefaultNamesTheField) {
  try {
    require_range(*constant_distribution(-1), "workload.steps", 1, 100, "model calls");
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "workload.steps: -1 is out of range; expected model calls in [1, 100]");
  }
}

TEST(Distribution, UnknownKindListsTheValidKinds) {
  const std::string msg = error_of("{dist: gamma, mean: 3}");
  EXPECT_NE(msg.find("x.yaml:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("workload.question_tokens.dist"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'gamma'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("constant, empirical, exponential, lognormal, normal, uniform"),
            std::string::npos)
      << msg;
}

TEST(Distribution, MissingDistIsAnError) {
  const std::string msg = error_of("{mean: 3, std: 1}");
  EXPECT_NE(msg.find("x.yaml:1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("workload.question_tokens"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'dist'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lognormal"), std::string::npos) << msg;
}

TEST(Distribution, UnknownParameterNamesFileLineAndValidParameters) {
  // On line 3 of the file.
  const std::string msg = error_of("\n\n{dist: normal, mean: 3, sigma: 1}");
  EXPECT_NE(msg.find("x.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("workload.question_tokens.sigma"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown parameter"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mean, std, min, max"), std::string::npos) << msg;
}

TEST(Distribution, BadValuesAreErrors) {
  EXPECT_NE(error_of("abc").find("x.yaml:1: workload.question_tokens"), std::string::npos);
  EXPECT_NE(error_of("[1, 2]").find("x.yaml:"), std::string::npos);
  EXPECT_NE(error_of("{dist: normal, std: -1}").find("workload.question_tokens.std"),
            std::string::npos);
  EXPECT_NE(error_of("{dist: exponential, mean: 0}").find("workload.question_tokens.mean"),
            std::string::npos);
  EXPECT_NE(error_of("{dist: uniform, low: x}").find("workload.question_tokens.low"),
            std::string::npos);
  // A missing node (e.g. an absent key) names the field.
  const YAML::Node root = YAML::Load("{other: 1}");
  try {
    parse_distribution(root["question_tokens"], kWhere);
    ADD_FAILURE() << "no error for a missing node";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("workload.question_tokens: missing"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fleetsim
