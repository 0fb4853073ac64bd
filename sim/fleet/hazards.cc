#include "sim/fleet/hazards.h"

#include <fmt/format.h>

namespace fleetsim {

std::optional<std::string> content_hazard(const RoutingPolicy& policy, const ArmSummary& summary) {
  // One completed request cannot have met an earlier one's blocks.
  constexpr std::int64_t kMinCompleted = 2;
  if (!policy.follows_prompt_content() || summary.completed < kMinCompleted ||
      summary.prefix_cache_reuse > 0) {
    return std::nullopt;
  }
  return fmt::format(
      "the policy routes by prompt content, but none of {} completed prompts found a block of "
      "it cached (prefix-cache reuse 0%): the prompts share no content (open_loop requests and "
      "those of a trace without text, such as Azure's or BurstGPT's, are each content of their "
      "own) or the pods cache no prefixes, so this arm measures load balancing alone",
      summary.completed);
}

}  // namespace fleetsim
