#include "policies/policy.h"

namespace fleetsim {

std::unique_ptr<RoutingPolicy> make_policy(const std::string& name, const Params& params,
                                           const PolicyContext& ctx) {
  return PolicyRegistry::instance().get(name, "policy").factory(params, ctx);
}

}  // namespace fleetsim
