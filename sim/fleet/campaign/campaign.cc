#include "sim/fleet/campaign/campaign.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <map>
#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/sweep.h"
#include "sim/fleet/workload.h"

namespace fleetsim {

const ParamSpec& campaign_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .integer("replicates", 5,
                   "seeds the A/B phase runs: the scenario's seed, seed + 1, ... (every arm sees "
                   "the same requests under one seed, so arms are compared seed by seed)",
                   2, 10000)
          .text("metrics", "throughput_req_s, ttft_p95_ms, prefix_cache_reuse_pct",
                "comma list of arm metrics to analyse (fleetsim list metrics); "
                "slo_attainment_pct is added when the scenario has an slo section")
          .text("baseline", "", "the arm the others are compared with ('' = the first arm)")
          .real("confidence", 0.95,
                "confidence of the bootstrap intervals; the TOST equivalence test runs at "
                "alpha = 1 - confidence",
                0.5, 0.999)
          .real("equivalence_margin_pct", 5,
                "an arm is equivalent to the baseline on a metric when the difference is shown "
                "to lie within +- this percent of the baseline's mean",
                0.001, 1000)
          .integer("bootstrap_resamples", 4000, "resamples of each BCa bootstrap interval", 200,
                   1000000)
          .integer("min_replicates", 5, "stability gate: at least this many replicates", 2, 10000)
          .real("max_cv_pct", 10,
                "stability gate: coefficient of variation across replicates of every analysed "
                "metric of every arm at most this",
                0, 1e6)
          .text("ramp_path", "",
                "calibrate phase: the load knob to ramp ('' = the workload's own: concurrency, "
                "streams or rate); a trace needs one, e.g. workload.time_scale")
          .real("ramp_start", 0,
                "calibrate phase: the knob's first value (0 = the workload's default)", 0)
          .real("ramp_factor", 2,
                "calibrate phase: each level is the previous times this (below 1 for a knob that "
                "lowers the load as it grows, such as time_scale)",
                0.01, 100)
          .integer("ramp_steps", 8, "calibrate phase: levels of the ramp at most", 2, 64)
          .real("plateau_gain_pct", 5,
                "calibrate phase: the ramp has reached its plateau at the first level whose "
                "throughput gains less than this over the best before it",
                0, 1000)
          .real("knee_target_pct", 90,
                "calibrate phase: the knee is the highest level whose SLO attainment is at least "
                "this (DistServe's goodput definition; needs an slo section)",
                0, 100);
  return kSpec;
}

namespace {

// The comma list of metric names, blanks and empty items dropped.
std::vector<std::string> metric_list(const std::string& text) {
  std::vector<std::string> names = split_trimmed(text, ',');
  std::erase(names, "");
  return names;
}

}  // namespace

Params parse_campaign(const YAML::Node& node, const YamlWhere& where, const Scenario& s) {
  Params p = campaign_spec().resolve(node, where);
  auto at = [&](const std::string& key) {
    const YamlWhere w = where.child(key);
    return node.IsDefined() && node[key].IsDefined() ? w.at(node[key]) : w.path;
  };
  const auto metrics = metric_list(p.get_string("metrics"));
  if (metrics.empty()) throw ScenarioError(at("metrics") + ": expected at least one metric");
  for (const auto& m : metrics) {
    try {
      arm_metric(m);
    } catch (const UnknownNameError& e) {
      throw ScenarioError(at("metrics") + ": " + e.what());
    }
    if (!s.slo.enabled && (m == "slo_attainment_pct" || m == "goodput_req_s")) {
      throw ScenarioError(at("metrics") + ": " + m +
                          " needs the scenario's slo section (the targets it counts against)");
    }
  }
  const std::string& baseline = p.get_string("baseline");
  if (!baseline.empty()) {
    std::vector<std::string> names;
    for (const auto& a : s.arms) names.push_back(a.name);
    if (std::find(names.begin(), names.end(), baseline) == names.end()) {
      throw ScenarioError(at("baseline") + ": no arm named '" + baseline +
                          "'; the scenario's arms: " + join(names, ", "));
    }
  }
  return p;
}

namespace {

std::vector<std::string> campaign_metrics(const Scenario& s) {
  std::vector<std::string> names = metric_list(s.campaign.get_string("metrics"));
  if (s.slo.enabled && std::find(names.begin(), names.end(), "slo_attainment_pct") == names.end()) {
    names.emplace_back("slo_attainment_pct");
  }
  return names;
}

std::vector<std::string> with(std::vector<std::string> base,
                              std::initializer_list<std::string> more) {
  base.insert(base.end(), more);
  return base;
}

// The phases that change the fleet or the workload drop what names the scenario's own arms
// (measured figures) or pods (faults).
std::vector<std::string> probe_overrides(const std::vector<std::string>& user,
                                         const std::string& arm) {
  return with(user,
              {"arms=[{name: " + arm + ", policy: round_robin}]", "faults=[]", "measured={}"});
}

constexpr int kProbesPerPod = 2;

HealthPhase run_health(const std::string& path, const CampaignOptions& o, const Scenario& base) {
  HealthPhase h;
  h.pods = base.fleet.pods;
  const int probes = kProbesPerPod * h.pods;
  // A trickle of short requests, round robin: every pod gets its share, none queues.
  const std::string workload =
      "workload={type: open_loop, arrival: constant, rate: 20, "
      "max_requests: " +
      std::to_string(probes) + ", prompt_tokens: 64, output_tokens: 4}";
  const Scenario s = load_scenario(path, with(probe_overrides(o.overrides, "health"), {workload}));
  const ArmResult a = run_arm(s, s.arms[0]);
  h.served.assign(static_cast<size_t>(h.pods), 0);
  h.idle_ttft_ms.assign(static_cast<size_t>(h.pods), 0.0);
  for (const auto& r : a.records) {
    if (r.arrival < 0 || !r.done || r.outcome != Outcome::kOk || r.pod < 0) continue;
    const auto p = static_cast<size_t>(r.pod);
    ++h.served[p];
    h.idle_ttft_ms[p] += ns_to_ms(r.first_token - r.arrival);
  }
  for (int p = 0; p < h.pods; ++p) {
    const auto i = static_cast<size_t>(p);
    if (h.served[i] > 0) {
      h.idle_ttft_ms[i] /= h.served[i];
    } else {
      h.problems.push_back("pod " + a.summary.per_pod[i].pod + " answered none of its " +
                           std::to_string(kProbesPerPod) + " probe requests");
    }
  }
  return h;
}

struct LoadKnob {
  std::string path;
  double start = 0;
};

// Each closed-loop workload's load is its concurrency; an open-loop one's its rate.
std::optional<LoadKnob> default_knob(const std::string& workload_type) {
  static const std::map<std::string, LoadKnob> kKnobs = {
      {"multi_turn_chat", {"workload.concurrency", 1}},
      {"concurrency_streams", {"workload.streams", 1}},
      {"agent_sessions", {"workload.concurrency", 1}},
      {"open_loop", {"workload.rate", 0.5}},
      {"shared_prefix", {"workload.rate", 0.5}},
  };
  const auto it = kKnobs.find(workload_type);
  if (it == kKnobs.end()) return std::nullopt;
  return it->second;
}

bool knob_is_integer(const Scenario& s, const std::string& path) {
  const std::string prefix = "workload.";
  if (path.rfind(prefix, 0) != 0) return false;
  const std::string name = path.substr(prefix.size());
  const auto workload = WorkloadRegistry::instance().get(s.workload_type, "workload");
  for (const auto& d : workload.spec.defs()) {
    if (d.name == name) return d.type == ParamType::kInt;
  }
  return false;
}

std::vector<std::string> ramp_values(double start, double factor, int steps, bool integer) {
  std::vector<std::string> values;
  double v = start;
  for (int k = 0; k < steps; ++k, v *= factor) {
    std::ostringstream text;
    if (integer) {
      text << std::max<long long>(1, std::llround(v));
    } else {
      text << v;
    }
    if (std::find(values.begin(), values.end(), text.str()) == values.end()) {
      values.push_back(text.str());
    }
  }
  return values;
}

CalibratePhase run_calibrate(const std::string& path, const CampaignOptions& o,
                             const Scenario& base) {
  CalibratePhase c;
  c.fleet_pods = base.fleet.pods;
  if (!base.fleet.pools.empty()) {
    c.skipped = "the fleet has several pools; calibrate each with its own scenario";
    return c;
  }
  // A MIG instance is isolated: one pod on it alone runs as it does in the fleet.
  if (base.fleet.pods_per_gpu > 1 && base.fleet.gpu_sharing != GpuSharing::kMig) {
    c.skipped = "pods share GPUs (pods_per_gpu > 1), so one pod alone is not one of the fleet's";
    return c;
  }
  const Params& p = base.campaign;
  std::optional<LoadKnob> knob = default_knob(base.workload_type);
  if (!p.get_string("ramp_path").empty()) {
    knob = LoadKnob{p.get_string("ramp_path"),
                    knob && knob->path == p.get_string("ramp_path") ? knob->start : 0.0};
  }
  if (!knob) {
    c.skipped = "workload " + base.workload_type +
                " has no load knob of its own; set campaign.ramp_path and campaign.ramp_start";
    return c;
  }
  if (p.get_double("ramp_start") > 0) knob->start = p.get_double("ramp_start");
  if (knob->start <= 0) {
    c.skipped = "campaign.ramp_start: give the first value of " + knob->path;
    return c;
  }
  c.path = knob->path;
  const auto values =
      ramp_values(knob->start, p.get_double("ramp_factor"),
                  static_cast<int>(p.get_int("ramp_steps")), knob_is_integer(base, knob->path));
  // The ramp sets the knob at every level; a --set of the same knob (the A/B's load) stays out.
  std::vector<std::string> sets;
  for (const auto& s : o.overrides) {
    if (s.substr(0, s.find('=')) != knob->path) sets.push_back(s);
  }
  const SweepResult ramp = run_sweep(path, with(probe_overrides(sets, "one-pod"), {"fleet.pods=1"}),
                                     {{knob->path, values}}, o.threads);
  const double gain = 1.0 + p.get_double("plateau_gain_pct") / 100.0;
  const double target = p.get_double("knee_target_pct");
  double best = -1;
  for (const auto& point : ramp.points) {
    const ArmResult& a = point.result.arms[0];
    RampLevel level;
    level.value = point.vary[0].second;
    level.throughput_req_s = a.summary.throughput_req_s;
    level.ttft_p95_ms = a.summary.ttft_ms.p95;
    if (base.slo.enabled) {
      level.slo_attainment_pct = arm_metric("slo_attainment_pct").value(a);
      if (*level.slo_attainment_pct >= target) c.knee = level.value;
    }
    if (c.plateau_level < 0 && best >= 0 && level.throughput_req_s < best * gain) {
      c.plateau_level = static_cast<int>(c.levels.size());
    }
    if (c.plateau_level < 0) best = std::max(best, level.throughput_req_s);
    c.levels.push_back(level);
  }
  c.capacity_req_s = std::max(best, 0.0);
  return c;
}

struct Replicate {
  std::vector<std::vector<double>> values;  // [arm][metric]
  std::vector<ProbeArm> probe;
  std::vector<std::int64_t> completed;  // per arm
};

// Arm by arm, keeping only the figures: a replicate's request records are dropped as soon as
// its metrics are read, so N replicates in flight cost N arms' records, not N runs'.
Replicate run_replicate(const Scenario& s, const std::vector<std::string>& metrics) {
  Replicate r;
  for (const ArmSpec& spec : s.arms) {
    const ArmResult a = run_arm(s, spec);
    std::vector<double> v;
    v.reserve(metrics.size());
    for (const auto& m : metrics) v.push_back(arm_metric(m).value(a));
    r.values.push_back(std::move(v));
    r.completed.push_back(a.summary.completed);
    r.probe.push_back({a.name, a.summary.routing.concentration_ratio,
                       a.summary.routing.concentration_ratio_max,
                       arm_metric("prefix_cache_reuse_pct").value(a)});
  }
  return r;
}

std::vector<Replicate> run_replicates(const Scenario& base, const std::vector<std::uint64_t>& seeds,
                                      const std::vector<std::string>& metrics, int threads) {
  std::vector<Replicate> out(seeds.size());
  rethrow_first(for_each_index(seeds.size(), threads, [&](size_t i) {
    Scenario s = base;
    s.seed = seeds[i];
    out[i] = run_replicate(s, metrics);
  }));
  return out;
}

// A metric undefined in some replicate (n/a: a percentile of no requests) is NaN there.
constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

// The findings, once every comparison is tested: Holm's adjustment over the family, then
// practical equivalence first (a difference inside the margin is no difference, however sure
// it is), then a difference, else inconclusive with the replicates that would decide it at the
// family's strictest level (alpha / m, Bonferroni's bound on Holm's).
void decide(std::vector<Comparison>& comparisons, double alpha) {
  std::vector<size_t> tested;
  std::vector<double> diff_p, tost_p;
  for (size_t i = 0; i < comparisons.size(); ++i) {
    if (comparisons[i].finding == "undefined") continue;
    tested.push_back(i);
    diff_p.push_back(comparisons[i].diff_p);
    tost_p.push_back(comparisons[i].tost.p_value);
  }
  const std::vector<double> diff_holm = holm_adjusted(diff_p);
  const std::vector<double> tost_holm = holm_adjusted(tost_p);
  const double strictest = alpha / static_cast<double>(std::max<size_t>(1, tested.size()));
  for (size_t k = 0; k < tested.size(); ++k) {
    Comparison& c = comparisons[tested[k]];
    c.diff_p_holm = diff_holm[k];
    c.tost_p_holm = tost_holm[k];
    if (c.tost_p_holm < alpha) {
      c.finding = "equivalent";
    } else if (c.diff_p_holm < alpha) {
      c.finding = c.diff > 0 ? "higher" : "lower";
      const Better better = arm_metric(c.metric).better;
      if (better != Better::kNeither) {
        c.reading = (c.diff > 0) == (better == Better::kHigher) ? "better" : "worse";
      }
    } else {
      c.finding = "inconclusive";
      const double gap =
          std::abs(c.diff) < c.margin ? c.margin - std::abs(c.diff) : std::abs(c.diff);
      c.replicates_needed = replicates_needed(c.diff_sd, gap, strictest, 10000);
    }
  }
}

void analyze(CampaignResult& r, const Scenario& s, const std::vector<std::string>& metrics,
             const std::vector<Replicate>& reps) {
  const Params& p = s.campaign;
  const int resamples = static_cast<int>(p.get_int("bootstrap_resamples"));
  const double alpha = 1.0 - r.confidence;
  size_t base_arm = 0;
  for (size_t a = 0; a < s.arms.size(); ++a) {
    if (s.arms[a].name == r.baseline) base_arm = a;
  }
  auto series = [&](size_t arm, size_t metric) {
    std::vector<double> v;
    v.reserve(reps.size());
    for (const auto& rep : reps) v.push_back(rep.values[arm][metric]);
    return v;
  };
  for (size_t a = 0; a < s.arms.size(); ++a) {
    ArmStats stats{s.arms[a].name, {}};
    for (size_t m = 0; m < metrics.size(); ++m) {
      MetricStats ms{metrics[m], series(a, m), {}, {}};
      ms.spread = spread(ms.values);
      Rng rng = make_rng(s.seed, "campaign/ci/" + s.arms[a].name + "/" + metrics[m]);
      ms.ci = all_finite(ms.values) ? bca_interval(ms.values, r.confidence, resamples, rng)
                                    : Interval{kUndefined, kUndefined};
      stats.metrics.push_back(std::move(ms));
    }
    r.arms.push_back(std::move(stats));
  }
  for (size_t a = 0; a < s.arms.size(); ++a) {
    if (a == base_arm) continue;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const auto base_v = series(base_arm, m);
      const auto arm_v = series(a, m);
      Comparison c;
      c.arm = s.arms[a].name;
      c.metric = metrics[m];
      c.baseline_mean = spread(base_v).mean;
      if (!all_finite(base_v) || !all_finite(arm_v)) {
        // The "every metric defined" gate refuses the campaign; nothing to test here.
        c.diff = c.diff_pct = c.margin = kUndefined;
        c.ci = {kUndefined, kUndefined};
        c.tost.p_value = kUndefined;
        c.finding = "undefined";
        r.comparisons.push_back(c);
        continue;
      }
      std::vector<double> d(base_v.size());
      for (size_t i = 0; i < d.size(); ++i) d[i] = arm_v[i] - base_v[i];
      const Spread ds = spread(d);
      c.diff = ds.mean;
      c.diff_pct = c.baseline_mean != 0 ? 100.0 * c.diff / std::abs(c.baseline_mean) : 0.0;
      Rng rng = make_rng(s.seed, "campaign/diff/" + c.arm + "/" + c.metric);
      c.ci = bca_interval(d, r.confidence, resamples, rng);
      c.margin = r.margin_pct / 100.0 * std::abs(c.baseline_mean);
      c.tost = paired_tost(base_v, arm_v, c.margin, alpha);
      c.diff_p = paired_t_p(base_v, arm_v);
      c.diff_sd = ds.sd;
      r.comparisons.push_back(c);
    }
  }
  decide(r.comparisons, alpha);
}

void judge(CampaignResult& r, const Scenario& s, const std::vector<Replicate>& reps) {
  const Params& p = s.campaign;
  Gate health{"health", r.health.problems.empty(), join(r.health.problems, "; ")};
  if (health.ok) health.detail = "all " + std::to_string(r.health.pods) + " pods answered";

  Gate ran{"every arm served every replicate", true, ""};
  const std::string runs =
      std::to_string(reps.size()) + " replicates x " + std::to_string(s.arms.size()) + " arms";
  for (size_t a = 0; a < s.arms.size(); ++a) {
    const auto idle = std::count_if(reps.begin(), reps.end(),
                                    [&](const Replicate& rep) { return rep.completed[a] == 0; });
    if (idle > 0) {
      ran.ok = false;
      ran.detail += "arm " + s.arms[a].name + " completed nothing in " + std::to_string(idle) +
                    " of " + std::to_string(reps.size()) + " replicates; ";
    }
  }
  if (ran.ok) ran.detail = runs;
  Gate defined{"every metric defined", true, ""};
  for (const auto& a : r.arms) {
    for (const auto& m : a.metrics) {
      if (!std::all_of(m.values.begin(), m.values.end(),
                       [](double v) { return std::isfinite(v); })) {
        defined.ok = false;
        defined.detail += a.arm + " " + m.metric + "; ";
      }
    }
  }
  if (defined.ok) defined.detail = runs;
  const int min_n = static_cast<int>(p.get_int("min_replicates"));
  const int n = static_cast<int>(r.seeds.size());
  Gate enough{"replicates", n >= min_n,
              std::to_string(n) + (n >= min_n ? " >= " : " < ") + std::to_string(min_n)};
  const double max_cv = p.get_double("max_cv_pct");
  Gate stable{"spread (CV) at most " + fixed_text(max_cv, 1) + "%", true, ""};
  for (const auto& a : r.arms) {
    for (const auto& m : a.metrics) {
      if (m.spread.cv_pct > max_cv) {
        stable.ok = false;
        stable.detail += a.arm + " " + m.metric + " " + fixed_text(m.spread.cv_pct, 1) + "%; ";
      }
    }
  }
  if (stable.ok) stable.detail = "every arm and metric";
  Gate decided{"every comparison decided", true, ""};
  int needed = 0;
  for (const auto& c : r.comparisons) {
    if (c.finding == "inconclusive") {
      decided.ok = false;
      decided.detail += c.arm + " " + c.metric + "; ";
      needed = std::max(needed, c.replicates_needed);
    }
  }
  if (decided.ok) decided.detail = std::to_string(r.comparisons.size()) + " comparisons";
  r.gates = {health, ran, defined, enough, stable, decided};
  for (Gate& g : r.gates) {
    if (g.detail.size() >= 2 && g.detail.compare(g.detail.size() - 2, 2, "; ") == 0) {
      g.detail.resize(g.detail.size() - 2);
    }
  }

  if (!health.ok || !ran.ok || !defined.ok) {
    r.verdict = "INVALID";
  } else if (!enough.ok || !decided.ok) {
    r.verdict = "ADD_REPLICATES";
    r.suggested_replicates = std::max({min_n, needed, n});
  } else if (!stable.ok) {
    r.verdict = "UNSTABLE";
  } else {
    r.verdict = "PUBLISHABLE";
  }
}

}  // namespace

CampaignResult run_campaign(const std::string& path, const CampaignOptions& o) {
  const Scenario s = load_scenario(path, o.overrides);
  CampaignResult r;
  r.scenario = s.name;
  const auto n = static_cast<std::uint64_t>(
      o.replicates ? *o.replicates : static_cast<int>(s.campaign.get_int("replicates")));
  if (o.replicates && *o.replicates < 2) {
    throw ScenarioError("--replicates: expected at least 2 (a spread needs two), got " +
                        std::to_string(*o.replicates));
  }
  for (std::uint64_t i = 0; i < n; ++i) r.seeds.push_back(s.seed + i);
  r.baseline = s.campaign.get_string("baseline").empty() ? s.arms[0].name
                                                         : s.campaign.get_string("baseline");
  r.confidence = s.campaign.get_double("confidence");
  r.margin_pct = s.campaign.get_double("equivalence_margin_pct");
  const std::vector<std::string> metrics = campaign_metrics(s);

  r.health = run_health(path, o, s);
  r.calibrate = run_calibrate(path, o, s);
  const std::vector<Replicate> reps = run_replicates(s, r.seeds, metrics, o.threads);
  r.probe = reps[0].probe;
  analyze(r, s, metrics, reps);
  judge(r, s, reps);
  return r;
}

}  // namespace fleetsim
