// Length and delay distributions for workloads. A distribution is written in YAML either as a
// plain number (constant) or as a map {dist: NAME, ...params}; each kind has a ParamSpec.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/params.h"
#include "sim/rng.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// The interval every draw of a distribution lies in; an end is infinite where the kind's draws
// are unbounded on that side and no min/max clamp was given.
struct Support {
  double lo = 0;
  double hi = 0;
};

class Distribution {
 public:
  virtual ~Distribution() = default;
  virtual double sample(Rng& rng) const = 0;
  virtual double mean() const = 0;
  virtual std::string describe() const = 0;
  virtual Support support() const = 0;
  // "file:line: field" of the YAML it was parsed from; empty for a built-in default. Kept so that
  // a range only the workload knows (require_range) can still be reported at the user's line.
  const std::string& where() const { return where_; }

 private:
  friend std::shared_ptr<const Distribution> parse_distribution(const YAML::Node& node,
                                                                const YamlWhere& where);
  std::string where_;
};

// Parses a distribution; errors name the file, line and field and list the valid kinds.
std::shared_ptr<const Distribution> parse_distribution(const YAML::Node& node,
                                                       const YamlWhere& where);
std::shared_ptr<const Distribution> constant_distribution(double value);
std::vector<std::string> distribution_names();

// The longest token segment (a prompt part, a question, an answer, a tool output) a workload may
// draw. Ten million tokens is beyond every public model's context window (Llama 4 Scout's 10M is
// the largest), so a longer request could only fail, after hashing its prompt for seconds (a
// draw of 1e12 tokens once hung a 4-request run).
inline constexpr double kMaxTokens = 1e7;

// Throws ScenarioError, at the line the distribution was written (or naming `field` for a
// default), when draws cannot be valid values of a field whose range is [lo, hi]: the support
// lies wholly outside it (a constant out of range, a uniform of negative lengths), a bounded
// support reaches above `hi` (a constant or uniform high too large), or the mean lies outside
// it. `what` says what the field counts ("tokens"). Draws of unbounded kinds (normal tails,
// lognormal, exponential) and of a support partly below `lo` are clamped into the range when
// drawn (sample_int): docs/workloads.md documents the floor ("at least 1") and min/max clamps.
void require_range(const Distribution& d, const std::string& field, double lo, double hi,
                   const std::string& what);
// require_range for a token length: at least `min_tokens` (0 where the part may be absent, 1
// where a request must carry or generate a token), at most kMaxTokens.
void require_tokens(const Distribution& d, const std::string& field, std::int32_t min_tokens);

// Draws a whole number: rounded, then clamped into [lo, hi] (see require_range).
std::int32_t sample_int(const Distribution& d, Rng& rng, std::int32_t lo, std::int32_t hi);
// Draws a token count: rounded, in [min_value, kMaxTokens].
std::int32_t sample_tokens(const Distribution& d, Rng& rng, std::int32_t min_value = 1);

}  // namespace fleetsim
