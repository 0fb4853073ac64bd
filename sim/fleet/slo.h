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

// A bound on a percentile of the arm's requests, in vLLM bench serve's names: p95_ttft_ms,
// p99_tpot_ms, p50_e2el_ms. A failed or unfinished request counts as an infinite latency (it
// missed), so a percentile is finite only while fewer requests failed than it leaves out.
struct PercentileTarget {
  std::string key;
  std::string figure;   // ttft, tpot or e2el
  double quantile = 0;  // 0.95
  double max_ms = 0;
};

// The scenario's targets: one set for every request, and per SLO class (Request.slo_class)
// overrides of some of them; and percentile targets over all the arm's requests.
struct SloSpec {
  bool enabled = false;  // the scenario has an slo section
  SloTargets targets;
  std::map<std::string, SloTargets> classes;
  std::vector<PercentileTarget> percentiles;
  // Each class's priority (`classes.NAME.priority`; 0 when it sets none), which requests of the
  // class carry to the engines' priority scheduling.
  std::map<std::string, std::int32_t> priorities;
  // The class's targets, or the section's own when the class has none of its own.
  const SloTargets& for_class(const std::string& slo_class) const;
  std::int32_t priority_of(const std::string& slo_class) const;
};

// ttft_ms, tpot_ms, e2e_ms: the keys of the section and of each entry of its `classes` map; and
// the percentile targets p50/p90/p95/p99 x ttft/tpot/e2el (p95_ttft_ms), the section's only.
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
