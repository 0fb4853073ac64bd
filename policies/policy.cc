#include "policies/policy.h"

#include <map>

namespace fleetsim {

std::unique_ptr<RoutingPolicy> make_policy(const std::string& name, const Params& params,
                                           const PolicyContext& ctx) {
  return PolicyRegistry::instance().get(name, "policy").factory(params, ctx);
}

std::vector<PolicyCounter> merge_counters(const std::vector<std::vector<PolicyCounter>>& parts) {
  std::vector<PolicyCounter> out;
  std::map<std::string, size_t> at;
  std::vector<double> weighted;  // sum of value x denominator, for ratios
  for (const auto& part : parts) {
    for (const auto& c : part) {
      auto [it, fresh] = at.emplace(c.name, out.size());
      if (fresh) {
        out.push_back({c.name, 0, c.ratio, 0});
        weighted.push_back(0);
      }
      PolicyCounter& m = out[it->second];
      if (m.ratio) {
        weighted[it->second] += c.value * c.denominator;
        m.denominator += c.denominator;
        m.value = m.denominator > 0 ? weighted[it->second] / m.denominator : 0;
      } else {
        m.value += c.value;
      }
    }
  }
  return out;
}

}  // namespace fleetsim
