// Service-level objectives and goodput@SLO: the scenario's `slo:` section, and how many of an
// arm's requests met their targets. A request is good when it completed and its TTFT, TPOT and
// end-to-end latency are within its class's targets (DistServe, Zhong et al., OSDI'24: goodput
// is the rate of requests that meet their SLOs); a failed or unfinished request is not.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/fleet/metrics.h"
#include "sim/params.h"

namespace YAML {
class Node;
}

namespace fleetsim {

// Latency targets in ms; 0 = no bound on that figure.
struct SloTargets {
  double ttft_ms = 0;
  double tpot_ms = 0;
  double e2e_ms = 0;
  bool any() const { return ttft_ms > 0 || tpot_ms > 0 || e2e_ms > 0; }
};

// The scenario's targets: one set for every request, and per SLO class (Request.slo_class)
// overrides of some of them.
struct SloSpec {
  bool enabled = false;  // the scenario has an slo section
  SloTargets targets;
  std::map<std::string, SloTargets> classes;
  // The class's targets, or the section's own when the class has none of its own.
  const SloTargets& for_class(const std::string& slo_class) const;
};

// ttft_ms, tpot_ms, e2e_ms: the keys of the section and of each entry of its `classes` map.
const ParamSpec& slo_targets_spec();
// Parses `slo: {ttft_ms, tpot_ms, e2e_ms, classes: {NAME: {...}}}`; a class inherits the targets
// it does not set. Errors name the file, line and field; a section that bounds nothing is one.
SloSpec parse_slo(const YAML::Node& node, const YamlWhere& where);

// Whether a completed request met `t`. TPOT is bounded only for requests of 2+ output tokens.
bool meets_slo(const RequestRecord& r, const SloTargets& t);

// Over the measured requests of `records`; `duration_s` is the span throughput is taken over.
GoodputSummary summarize_goodput(const std::vector<RequestRecord>& records, const SloSpec& slo,
                                 double duration_s);

}  // namespace fleetsim
