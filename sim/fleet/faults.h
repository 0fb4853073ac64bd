// Faults scheduled in a scenario (`faults:`): pod kills, deletions and restarts, node loss
// (through the topology graph), picker outages, slow pods, network delay and KV-transfer
// failures.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/params.h"
#include "sim/time.h"

namespace YAML {
class Node;
}

namespace fleetsim {

class EventLoop;
class Gateway;
class Pod;
class Topology;
class FailureTracker;

struct FaultSpec {
  std::string kind;
  Params params;
  // "file:line: faults.N.target": the target is checked against the arm's fleet when it runs.
  std::string target_where;
  // "file:line: faults.N.at_s", for a fault the run ends before.
  std::string at_where;
};

// kind -> spec of its parameters (each with default and help).
const std::map<std::string, ParamSpec>& fault_specs();
std::vector<FaultSpec> parse_faults(const YAML::Node& node, const YamlWhere& where);

// Schedules every fault on the loop (as background events) against this arm's fleet.
void schedule_faults(const std::vector<FaultSpec>& faults, EventLoop& loop,
                     std::vector<std::unique_ptr<Pod>>& pods, Gateway& gateway,
                     const Topology& topology, FailureTracker& tracker);

}  // namespace fleetsim
