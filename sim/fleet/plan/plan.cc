#include "sim/fleet/plan/plan.h"

#include <algorithm>
#include <exception>
#include <iomanip>
#include <map>
#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {

void check_plan_options(const Scenario& s, const PlanOptions& o, const std::string& path) {
  if (!s.slo.enabled) {
    throw ScenarioError(path +
                        ": the plan needs an slo section (the targets attainment counts against), "
                        "e.g. slo: {ttft_ms: 1000, tpot_ms: 60}");
  }
  if (!(o.target_pct > 0 && o.target_pct <= 100)) {  // NaN too
    throw ScenarioError("--target: expected a percent in (0, 100], got " +
                        std::to_string(o.target_pct));
  }
  if (o.max_pods < 1) throw ScenarioError("--max-pods: expected at least 1");
  if (o.seeds < 1) throw ScenarioError("--seeds: expected at least 1");
  const bool pool_path = o.path.starts_with("fleet.pools.") && o.path.ends_with(".pods");
  if (o.path != "fleet.pods" && !pool_path) {
    throw ScenarioError("--path " + o.path +
                        ": expected a pod count, fleet.pods or fleet.pools.NAME.pods");
  }
  if (o.path == "fleet.pods" && !s.fleet.pools.empty()) {
    std::vector<std::string> names;
    for (const auto& p : s.fleet.pools) names.push_back("fleet.pools." + p.name + ".pods");
    throw ScenarioError(path + ": the fleet has pools; search one pool's pod count: --path " +
                        join(names, " or --path "));
  }
}

std::vector<std::uint64_t> plan_seeds(std::uint64_t base, int seeds) {
  std::vector<std::uint64_t> out;
  for (int i = 0; i < seeds; ++i) out.push_back(base + static_cast<std::uint64_t>(i));
  return out;
}

void run_over_seeds(Scenario s, size_t arm, int seeds,
                    const std::function<void(const ArmResult&)>& each) {
  const ArmSpec spec = s.arms[arm];
  for (const std::uint64_t seed : plan_seeds(s.seed, seeds)) {
    s.seed = seed;
    each(run_arm(s, spec));
  }
}

PlanPoint evaluate_plan_point(const std::string& path, const PlanOptions& o, size_t arm,
                              const std::vector<std::string>& counts) {
  std::vector<std::string> sets = o.overrides;
  sets.insert(sets.end(), counts.begin(), counts.end());
  PlanPoint p;
  run_over_seeds(load_scenario(path, sets), arm, o.seeds, [&](const ArmResult& a) {
    const ArmSummary& sum = a.summary;
    p.attainment_pct += sum.goodput ? 100.0 * sum.goodput->attainment : 0.0;
    p.goodput_req_s += sum.goodput ? sum.goodput->goodput_req_s : 0.0;
    p.throughput_req_s += sum.throughput_req_s;
    p.ttft_p95_ms += sum.ttft_ms.p95;
    p.tpot_p50_ms += sum.tpot_ms.p50;
    if (sum.goodput) p.percentiles_met = p.percentiles_met && sum.goodput->percentiles_met();
  });
  const double n = o.seeds;
  p.attainment_pct /= n;
  p.goodput_req_s /= n;
  p.throughput_req_s /= n;
  p.ttft_p95_ms /= n;
  p.tpot_p50_ms /= n;
  return p;
}

namespace {

// More than noise: one point of attainment (6 requests of the flagship's 600).
constexpr double kFallPct = 1.0;

std::optional<AttainmentFall> attainment_fall(const std::vector<PlanPoint>& by_pods) {
  if (by_pods.empty()) return std::nullopt;
  const PlanPoint* best = &by_pods.front();
  for (const auto& p : by_pods) {
    if (p.attainment_pct > best->attainment_pct) best = &p;
  }
  const PlanPoint* worst = nullptr;
  for (const auto& p : by_pods) {
    if (p.pods > best->pods && (worst == nullptr || p.attainment_pct < worst->attainment_pct)) {
      worst = &p;
    }
  }
  if (worst == nullptr || best->attainment_pct - worst->attainment_pct <= kFallPct) {
    return std::nullopt;
  }
  return AttainmentFall{*best, *worst};
}

// Runs and memoises the arm at a pod count: a search may ask for a count twice.
class ArmSearch {
 public:
  ArmSearch(const std::string& path, const PlanOptions& o, size_t arm)
      : path_(path), o_(o), arm_(arm) {}

  const PlanPoint& at(int pods) {
    if (const auto it = points_.find(pods); it != points_.end()) return it->second;
    PlanPoint p = evaluate_plan_point(path_, o_, arm_, {o_.path + "=" + std::to_string(pods)});
    p.pods = pods;
    return points_.emplace(pods, p).first->second;
  }

  bool meets(int pods) {
    const PlanPoint& p = at(pods);
    return p.attainment_pct >= o_.target_pct - 1e-9 && p.percentiles_met;
  }

  ArmPlan result(const std::string& name, std::optional<int> needed) const {
    ArmPlan plan{name, needed, {}, std::nullopt};
    for (const auto& [pods, p] : points_) plan.evaluated.push_back(p);
    plan.falls = attainment_fall(plan.evaluated);
    return plan;
  }

 private:
  std::string path_;
  const PlanOptions& o_;
  size_t arm_;
  std::map<int, PlanPoint> points_;
};

// Doubling, then bisection: assumes attainment does not fall as pods are added, which holds
// when more pods only add capacity; the evaluated points in the result show where it does not.
ArmPlan search(const std::string& path, const PlanOptions& o, size_t arm, const std::string& name) {
  ArmSearch s(path, o, arm);
  int miss = 0;  // largest count known to miss (0: none yet)
  int hit = -1;
  for (int pods = 1;; pods = std::min(pods * 2, o.max_pods)) {
    if (s.meets(pods)) {
      hit = pods;
      break;
    }
    miss = pods;
    if (pods == o.max_pods) return s.result(name, std::nullopt);
  }
  while (hit - miss > 1) {
    const int mid = miss + (hit - miss) / 2;
    if (s.meets(mid)) {
      hit = mid;
    } else {
      miss = mid;
    }
  }
  return s.result(name, hit);
}

}  // namespace

PlanResult run_plan(const std::string& path, const PlanOptions& o) {
  const Scenario base = load_scenario(path, o.overrides);
  check_plan_options(base, o, path);
  // The path must name an integer pod count the scenario accepts.
  {
    std::vector<std::string> sets = o.overrides;
    sets.push_back(o.path + "=1");
    load_scenario(path, sets);
  }
  PlanResult r;
  r.scenario = base.name;
  r.path = o.path;
  r.target_pct = o.target_pct;
  r.max_pods = o.max_pods;
  r.seeds = plan_seeds(base.seed, o.seeds);
  for (const PercentileTarget& t : base.slo.percentiles) {
    std::ostringstream target;
    target << t.key << " <= " << t.max_ms;
    r.percentile_targets.push_back(target.str());
  }
  r.arms.resize(base.arms.size());
  rethrow_first(for_each_index(base.arms.size(), o.threads, [&](size_t a) {
    r.arms[a] = search(path, o, a, base.arms[a].name);
  }));
  return r;
}

nlohmann::json plan_json(const PlanResult& r) {
  nlohmann::json j = {{"scenario", r.scenario},     {"path", r.path},
                      {"target_pct", r.target_pct}, {"max_pods", r.max_pods},
                      {"seeds", r.seeds},           {"arms", nlohmann::json::array()}};
  for (const auto& a : r.arms) {
    nlohmann::json arm = {
        {"arm", a.arm},
        {"pods_needed", a.pods_needed ? nlohmann::json(*a.pods_needed) : nlohmann::json()},
        {"evaluated", nlohmann::json::array()},
        {"attainment_falls", a.falls ? nlohmann::json{{"best_pods", a.falls->best.pods},
                                                      {"best_pct", a.falls->best.attainment_pct},
                                                      {"worst_pods", a.falls->worst.pods},
                                                      {"worst_pct", a.falls->worst.attainment_pct}}
                                     : nlohmann::json()}};
    for (const auto& p : a.evaluated) {
      arm["evaluated"].push_back({{"pods", p.pods},
                                  {"slo_attainment_pct", p.attainment_pct},
                                  {"goodput_req_s", p.goodput_req_s},
                                  {"throughput_req_s", p.throughput_req_s},
                                  {"ttft_p95_ms", p.ttft_p95_ms},
                                  {"tpot_p50_ms", p.tpot_p50_ms}});
      if (!r.percentile_targets.empty()) {
        arm["evaluated"].back()["percentile_targets_met"] = p.percentiles_met;
      }
    }
    j["arms"].push_back(arm);
  }
  return j;
}

void write_plan_report(std::ostream& os, const PlanResult& r) {
  os << "plan " << r.scenario << ": smallest " << r.path
     << " with SLO attainment >= " << r.target_pct << "%"
     << (r.percentile_targets.empty() ? "" : " and " + join(r.percentile_targets, ", "))
     << (r.seeds.size() > 1 ? " (mean of " + std::to_string(r.seeds.size()) + " seeds)" : "")
     << "\n";
  os << std::fixed;
  for (const auto& a : r.arms) {
    os << a.arm << ": ";
    if (a.pods_needed) {
      os << *a.pods_needed << " pods\n";
    } else {
      os << "not met up to " << r.max_pods << " pods\n";
    }
    os << "  " << std::left << std::setw(6) << "pods" << std::right << std::setw(8) << "SLO %"
       << std::setw(12) << "goodput/s" << std::setw(10) << "req/s" << std::setw(14) << "TTFT p95 ms"
       << std::setw(14) << "TPOT p50 ms"
       << "\n";
    for (const auto& p : a.evaluated) {
      os << "  " << std::left << std::setw(6) << p.pods << std::right << std::setprecision(1)
         << std::setw(8) << p.attainment_pct << std::setprecision(2) << std::setw(12)
         << p.goodput_req_s << std::setw(10) << p.throughput_req_s << std::setprecision(0)
         << std::setw(14) << p.ttft_p95_ms << std::setprecision(1) << std::setw(14) << p.tpot_p50_ms
         << (p.percentiles_met ? "" : "  percentile target missed")
         << (a.pods_needed && p.pods == *a.pods_needed ? "  <- needed" : "") << "\n";
    }
    if (a.falls) {
      os << std::setprecision(1) << "  attainment falls as pods are added ("
         << a.falls->best.attainment_pct << "% at " << a.falls->best.pods << " pods, "
         << a.falls->worst.attainment_pct << "% at " << a.falls->worst.pods
         << "): more pods do not help this arm, and the search, "
            "which assumes they do, may have missed a smaller count\n";
    }
  }
}

}  // namespace fleetsim
