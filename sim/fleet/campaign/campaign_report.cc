// The campaign's outputs: JSON (every figure, for notebooks and CI) and a text report that reads
// top to bottom like the campaign: phases, then findings, then the gates and the verdict.
#include <cmath>
#include <iomanip>

#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/campaign/campaign.h"
#include "sim/fleet/report.h"

namespace fleetsim {
namespace {

// JSON has no infinity: a CV over a mean of 0 is written as null.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json interval(const Interval& i) { return {number(i.low), number(i.high)}; }

// A metric's figures with the decimals of the result table.
std::string shown(const std::string& metric, double v) {
  return fixed_text(v, arm_metric(metric).decimals);
}

std::string pct(double v) { return std::isfinite(v) ? fixed_text(v, 1) + "%" : "inf"; }

}  // namespace

nlohmann::json campaign_json(const CampaignResult& r) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["seeds"] = r.seeds;
  j["baseline"] = r.baseline;
  j["confidence"] = r.confidence;
  j["equivalence_margin_pct"] = r.margin_pct;
  j["health"] = {{"pods", r.health.pods},
                 {"served", r.health.served},
                 {"idle_ttft_ms", r.health.idle_ttft_ms},
                 {"problems", r.health.problems}};
  const CalibratePhase& c = r.calibrate;
  nlohmann::json cal = {{"skipped", c.skipped}, {"path", c.path}};
  cal["levels"] = nlohmann::json::array();
  for (const auto& l : c.levels) {
    nlohmann::json level = {{"value", l.value},
                            {"throughput_req_s", l.throughput_req_s},
                            {"ttft_p95_ms", l.ttft_p95_ms}};
    if (l.slo_attainment_pct) level["slo_attainment_pct"] = *l.slo_attainment_pct;
    cal["levels"].push_back(level);
  }
  cal["plateau_at"] = c.plateau_level >= 0
                          ? nlohmann::json(c.levels[static_cast<size_t>(c.plateau_level)].value)
                          : nlohmann::json();
  cal["capacity_per_pod_req_s"] = c.capacity_req_s;
  cal["fleet_pods"] = c.fleet_pods;
  cal["knee"] = c.knee ? nlohmann::json(*c.knee) : nlohmann::json();
  j["calibrate"] = cal;
  j["probe"] = nlohmann::json::array();
  for (const auto& p : r.probe) {
    j["probe"].push_back({{"arm", p.arm},
                          {"concentration_peak_mean", p.concentration_mean},
                          {"concentration_peak_mean_max", p.concentration_max},
                          {"prefix_cache_reuse_pct", p.prefix_cache_reuse_pct}});
  }
  j["arms"] = nlohmann::json::array();
  for (const auto& a : r.arms) {
    nlohmann::json arm = {{"arm", a.arm}, {"metrics", nlohmann::json::object()}};
    for (const auto& m : a.metrics) {
      arm["metrics"][m.metric] = {{"values", m.values},
                                  {"mean", m.spread.mean},
                                  {"sd", m.spread.sd},
                                  {"cv_pct", number(m.spread.cv_pct)},
                                  {"ci", interval(m.ci)}};
    }
    j["arms"].push_back(arm);
  }
  j["comparisons"] = nlohmann::json::array();
  for (const auto& cmp : r.comparisons) {
    nlohmann::json e = {
        {"arm", cmp.arm},       {"metric", cmp.metric},       {"baseline_mean", cmp.baseline_mean},
        {"diff", cmp.diff},     {"diff_pct", cmp.diff_pct},   {"ci", interval(cmp.ci)},
        {"margin", cmp.margin}, {"tost_p", cmp.tost.p_value}, {"finding", cmp.finding}};
    e["diff_p"] = cmp.diff_p;
    e["diff_p_holm"] = cmp.diff_p_holm;
    e["tost_p_holm"] = cmp.tost_p_holm;
    if (!cmp.reading.empty()) e["reading"] = cmp.reading;
    if (cmp.finding == "inconclusive") e["replicates_needed"] = cmp.replicates_needed;
    j["comparisons"].push_back(e);
  }
  j["gates"] = nlohmann::json::array();
  for (const auto& g : r.gates) {
    j["gates"].push_back({{"gate", g.name}, {"ok", g.ok}, {"detail", g.detail}});
  }
  j["verdict"] = r.verdict;
  if (r.verdict == "ADD_REPLICATES") j["suggested_replicates"] = r.suggested_replicates;
  return j;
}

void write_campaign_report(std::ostream& os, const CampaignResult& r) {
  os << "campaign " << r.scenario << "  seeds " << r.seeds.front() << ".." << r.seeds.back() << " ("
     << r.seeds.size() << " replicates)  baseline " << r.baseline << "\n\n";
  os << "1. health: " << (r.health.problems.empty() ? "ok" : "FAILED") << ", idle TTFT per pod ms:";
  for (double t : r.health.idle_ttft_ms) os << " " << fixed_text(t, 0);
  os << "\n";
  for (const auto& p : r.health.problems) os << "   " << p << "\n";

  const CalibratePhase& c = r.calibrate;
  if (!c.skipped.empty()) {
    os << "2. calibrate: skipped: " << c.skipped << "\n";
  } else {
    os << "2. calibrate: one pod, " << c.path << " ramped:";
    for (size_t i = 0; i < c.levels.size(); ++i) {
      const auto& l = c.levels[i];
      os << (i ? "," : "") << " " << l.value << " -> " << fixed_text(l.throughput_req_s, 2)
         << " req/s";
      if (l.slo_attainment_pct) os << " (SLO " << fixed_text(*l.slo_attainment_pct, 0) << "%)";
      if (static_cast<int>(i) == c.plateau_level) os << " [plateau]";
    }
    os << "\n   capacity " << fixed_text(c.capacity_req_s, 2) << " req/s per pod"
       << (c.plateau_level < 0 ? " (no plateau reached: at least this)" : "") << ", x "
       << c.fleet_pods << " pods = " << fixed_text(c.capacity_req_s * c.fleet_pods, 1)
       << " req/s for the fleet";
    if (c.levels.front().slo_attainment_pct) {
      os << "; knee " << (c.knee ? c.path + " = " + *c.knee : "none (no level meets the target)");
    }
    os << "\n";
  }
  // The worst single sample is in the JSON; in a drain with one request left it is the pod
  // count, so the text shows the mean over the run.
  os << "3. probe (seed " << r.seeds.front() << "): concentration peak/mean";
  for (const auto& p : r.probe) os << "  " << p.arm << " " << fixed_text(p.concentration_mean, 2);
  os << "\n4. A/B and 5. analysis: mean [" << fixed_text(100 * r.confidence, 0)
     << "% BCa interval] CV\n";
  for (const auto& a : r.arms) {
    for (const auto& m : a.metrics) {
      os << "   " << std::left << std::setw(14) << a.arm << std::setw(24) << m.metric
         << shown(m.metric, m.spread.mean) << " [" << shown(m.metric, m.ci.low) << ", "
         << shown(m.metric, m.ci.high) << "]  CV " << pct(m.spread.cv_pct) << "\n";
    }
  }
  if (!r.comparisons.empty()) {
    os << "   against " << r.baseline << " (paired by seed; equivalent = within +-"
       << fixed_text(r.margin_pct, 1) << "%, TOST; Holm-adjusted over " << r.comparisons.size()
       << " comparisons):\n";
  }
  for (const auto& cmp : r.comparisons) {
    os << "   " << std::left << std::setw(14) << cmp.arm << std::setw(24) << cmp.metric
       << (cmp.diff >= 0 ? "+" : "") << shown(cmp.metric, cmp.diff) << " ("
       << (cmp.diff_pct >= 0 ? "+" : "") << fixed_text(cmp.diff_pct, 1) << "%) ["
       << shown(cmp.metric, cmp.ci.low) << ", " << shown(cmp.metric, cmp.ci.high) << "]  "
       << cmp.finding << (cmp.reading.empty() ? "" : ", " + cmp.reading);
    if (cmp.finding == "inconclusive") os << " (about " << cmp.replicates_needed << " replicates)";
    os << "\n";
  }
  os << "gates:\n";
  for (const auto& g : r.gates) {
    os << "   [" << (g.ok ? "ok" : "!!") << "] " << g.name << ": " << g.detail << "\n";
  }
  os << "verdict: " << r.verdict;
  if (r.verdict == "ADD_REPLICATES") os << " (run about " << r.suggested_replicates << ")";
  os << "\n";
  // Seeds vary only what the simulator draws: arrival times and lengths, never a real fleet's
  // noise (clocks, kernels, networks), so the spread here is a floor under a real campaign's.
  os << "note: simulated; replicates differ by seed only, so a real campaign's spread is larger:\n"
     << "      plan at least " << r.seeds.size() << " replicates for it"
     << (r.calibrate.knee
             ? ", at loads up to the knee (" + r.calibrate.path + " = " + *r.calibrate.knee + ")"
             : "")
     << "\n";
}

}  // namespace fleetsim
