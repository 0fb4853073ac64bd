// The HPAs of an arm, from the scenario's `autoscaling` section and the arm's own. One HPA
// (`pool` names the pool it scales) or one per pool (`pools: {NAME: {...}}`, each entry over the
// section's own fields); docs/autoscaling.md gives the layering.
#pragma once

#include <vector>

#include "sim/fleet/scenario.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// `scenario` and `arm` are the two sections (either may be undefined). Errors name the file,
// line and field: an unknown pool, `pool` beside `pools`, a pool's start outside [min, max].
std::vector<HpaSpec> resolve_hpas(const YAML::Node& scenario, const YamlWhere& sw,
                                  const YAML::Node& arm, const YamlWhere& aw,
                                  const FleetSpec& fleet);

}  // namespace fleetsim
