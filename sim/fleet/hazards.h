// Hazards the figures alone hide, said beside them (stderr, JSON warnings, Python warnings).
#pragma once

#include <optional>
#include <string>

#include "policies/policy.h"
#include "sim/fleet/metrics.h"

namespace fleetsim {

// A policy that follows prompt content on an arm whose prompts found nothing cached: the
// workload shares no content (a trace without text gives each prompt content of its own) or the
// pods cache no prefixes, so the arm compares load balancing only. Empty otherwise.
std::optional<std::string> content_hazard(const RoutingPolicy& policy, const ArmSummary& summary);

}  // namespace fleetsim
