// Counters a policy keeps about its own decisions (hits, fallbacks, rebinds, ...), named after
// the metric of the system it models where there is one.
#pragma once

#include <string>
#include <vector>

namespace fleetsim {

struct PolicyCounter {
  std::string name;
  double value = 0;
};

// Implemented by policies that report counters. The runner can surface them after a run with
// dynamic_cast<const PolicyCounterSource*>(policy) until RoutingPolicy grows a counters() hook.
class PolicyCounterSource {
 public:
  virtual ~PolicyCounterSource() = default;
  virtual std::vector<PolicyCounter> counters() const = 0;
};

}  // namespace fleetsim
