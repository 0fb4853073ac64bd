// Length and delay distributions for workloads. A distribution is written in YAML either as a
// plain number (constant) or as a map {dist: NAME, ...params}; each kind has a ParamSpec.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/params.h"
#include "sim/rng.h"

namespace YAML {
class Node;
}

namespace fleetsim {

class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual double sample(Rng& rng) const = 0;
  virtual double mean() const = 0;
  virtual std::string describe() const = 0;
};

// Parses a distribution; errors name the file, line and field and list the valid kinds.
std::shared_ptr<const Distribution> parse_distribution(const YAML::Node& node,
                                                       const YamlWhere& where);
std::shared_ptr<const Distribution> constant_distribution(double value);
std::vector<std::string> distribution_names();

// Draws a token count: rounded, at least `min_value`.
std::int32_t sample_tokens(const Distribution& d, Rng& rng, std::int32_t min_value = 1);

}  // namespace fleetsim
