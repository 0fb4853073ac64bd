// A benchmark campaign, run in simulation: the five phases a real A/B comparison of routing arms
// goes through before its figures may be published (docs/campaign.md):
//   1. health      every pod answers a probe request;
//   2. calibrate   one pod's capacity, from a geometric ramp of the workload's load knob that
//                  stops at a plateau (and the knee: the highest load meeting the SLO target);
//   3. probe       the routing mechanism at work: each arm's peak/mean concentration;
//   4. A/B         the scenario replayed over N seeds, every arm on the same requests per seed;
//   5. analyze     per arm and metric the mean with a BCa bootstrap interval and the spread;
//                  per arm against the baseline the paired difference, its interval and a TOST
//                  equivalence test;
// and a verdict from validity and stability gates: PUBLISHABLE, ADD_REPLICATES, UNSTABLE or
// INVALID.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/fleet/campaign/replicate_stats.h"
#include "sim/params.h"

namespace YAML {
class Node;
}

namespace fleetsim {

struct Scenario;

// The scenario's `campaign:` section.
const ParamSpec& campaign_spec();
// Resolves it (a missing section: the defaults); a metric or baseline arm the scenario does not
// have is a ScenarioError naming the file, line and the valid names. Called once `s`'s arms and
// slo section are parsed.
Params parse_campaign(const YAML::Node& node, const YamlWhere& where, const Scenario& s);

struct CampaignOptions {
  std::vector<std::string> overrides;  // --set, for every phase
  std::optional<int> replicates;       // overrides campaign.replicates
  int threads = 0;                     // <= 0: the hardware's count; results do not depend on it
};

struct HealthPhase {
  int pods = 0;
  std::vector<int> served;            // probe requests each pod completed
  std::vector<double> idle_ttft_ms;   // the mean TTFT of its probes, per pod (0 if none)
  std::vector<std::string> problems;  // empty when healthy
};

struct RampLevel {
  std::string value;
  double throughput_req_s = 0;
  double ttft_p95_ms = 0;
  std::optional<double> slo_attainment_pct;
};

struct CalibratePhase {
  std::string skipped;  // why the phase did not run; empty when it ran
  std::string path;     // the load knob ramped
  std::vector<RampLevel> levels;
  int plateau_level = -1;     // index of the level where the ramp stops gaining; -1: none reached
  double capacity_req_s = 0;  // one pod's: the best throughput up to the plateau
  int fleet_pods = 0;
  std::optional<std::string> knee;  // highest level value meeting the SLO target
};

struct ProbeArm {
  std::string arm;
  double concentration_mean = 0;
  double concentration_max = 0;
  double prefix_cache_reuse_pct = 0;
};

struct MetricStats {
  std::string metric;
  std::vector<double> values;  // per replicate, seed order
  Spread spread;
  Interval ci;
};

struct ArmStats {
  std::string arm;
  std::vector<MetricStats> metrics;  // in campaign.metrics order
};

struct Comparison {
  std::string arm;
  std::string metric;
  double baseline_mean = 0;
  double diff = 0;      // arm - baseline, mean of the per-seed differences
  double diff_pct = 0;  // of the baseline mean
  double diff_sd = 0;   // sd of the per-seed differences
  Interval ci;          // BCa interval of the difference
  double margin = 0;    // the equivalence margin, in the metric's unit
  Tost tost;
  double diff_p = 1;  // paired t test of a difference, two-sided
  // Holm-adjusted across the campaign's comparisons (the difference tests one family, the
  // equivalence tests another): the findings read these, so six comparisons are not six chances.
  double diff_p_holm = 1;
  double tost_p_holm = 1;
  std::string finding;        // equivalent, higher, lower, inconclusive, undefined
  std::string reading;        // higher or lower: better or worse by the metric's direction
  int replicates_needed = 0;  // inconclusive only: about how many would decide it
};

struct Gate {
  std::string name;
  bool ok = true;
  std::string detail;
};

struct CampaignResult {
  std::string scenario;
  std::vector<std::uint64_t> seeds;
  std::string baseline;
  double confidence = 0.95;
  double margin_pct = 5;
  HealthPhase health;
  CalibratePhase calibrate;
  std::vector<ProbeArm> probe;
  std::vector<ArmStats> arms;
  std::vector<Comparison> comparisons;
  std::vector<Gate> gates;
  std::string verdict;
  int suggested_replicates = 0;  // ADD_REPLICATES: the replicates that would decide every finding
};

CampaignResult run_campaign(const std::string& scenario_path, const CampaignOptions& options);

nlohmann::json campaign_json(const CampaignResult& r);
void write_campaign_report(std::ostream& os, const CampaignResult& r);

}  // namespace fleetsim
