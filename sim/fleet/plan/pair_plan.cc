#include "sim/fleet/plan/pair_plan.h"

#include <algorithm>
#include <iomanip>
#include <map>

#include "sim/errors.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// The GPUs a fleet takes, pool by pool.
std::int64_t fleet_gpus(const Scenario& s) {
  const FleetFacts facts = fleet_facts(s);
  const std::vector<PoolSpec> pools = fleet_pools(s.fleet);
  std::int64_t gpus = 0;
  for (size_t i = 0; i < pools.size(); ++i)
    gpus += pool_gpus(facts.pools[i], pools[i].pods_per_gpu);
  return gpus;
}

std::vector<std::string> count_sets(const std::array<std::string, 2>& paths,
                                    const std::array<int, 2>& pods) {
  return {paths[0] + "=" + std::to_string(pods[0]), paths[1] + "=" + std::to_string(pods[1])};
}

// Runs and memoises one arm at pairs of counts.
class PairSearch {
 public:
  PairSearch(const std::string& path, const PlanOptions& o, size_t arm,
             const std::array<std::string, 2>& paths)
      : path_(path), o_(o), arm_(arm), paths_(paths) {}

  const PairPoint& at(int a, int b) {
    const std::array<int, 2> key = {a, b};
    if (const auto it = points_.find(key); it != points_.end()) return it->second;
    PairPoint p;
    p.pods = key;
    p.figures = evaluate_plan_point(path_, o_, arm_, count_sets(paths_, key));
    p.gpus = gpus(key);
    return points_.emplace(key, p).first->second;
  }
  bool meets(int a, int b) {
    const PlanPoint& p = at(a, b).figures;
    return p.attainment_pct >= o_.target_pct - 1e-9 && p.percentiles_met;
  }
  // Without running the arm: what the pair would cost.
  std::int64_t gpus(const std::array<int, 2>& pods) const {
    std::vector<std::string> sets = o_.overrides;
    for (const auto& s : count_sets(paths_, pods)) sets.push_back(s);
    return fleet_gpus(load_scenario(path_, sets));
  }
  std::vector<PairPoint> evaluated() const {
    std::vector<PairPoint> out;
    for (const auto& [key, p] : points_) out.push_back(p);
    return out;
  }

 private:
  std::string path_;
  const PlanOptions& o_;
  size_t arm_;
  std::array<std::string, 2> paths_;
  std::map<std::array<int, 2>, PairPoint> points_;
};

// The smallest count in (miss, hit] for which `meets` holds, given that it holds at `hit` and
// (when miss >= 1) not at `miss`: bisection.
template <typename Meets>
int smallest_meeting(int miss, int hit, Meets meets) {
  while (hit - miss > 1) {
    const int mid = miss + (hit - miss) / 2;
    (meets(mid) ? hit : miss) = mid;
  }
  return hit;
}

// Attainment is taken not to fall as either count grows. The smallest first count that meets
// with the most second pods starts the frontier; each larger first count needs at most the
// second count before it, found by bisection below it. The walk stops where the second count
// reaches one, or where the first count's pods alone cost as much as the cheapest pair so far.
ArmPairPlan search(const std::string& path, const PlanOptions& o, size_t arm,
                   const std::string& name, const std::array<std::string, 2>& paths) {
  PairSearch s(path, o, arm, paths);
  ArmPairPlan plan;
  plan.arm = name;
  const int m = o.max_pods;
  int miss = 0, hit = -1;
  for (int a = 1;; a = std::min(a * 2, m)) {
    if (s.meets(a, m)) {
      hit = a;
      break;
    }
    miss = a;
    if (a == m) break;
  }
  if (hit > 0) {
    const int first = smallest_meeting(miss, hit, [&](int a) { return s.meets(a, m); });
    int b = m;
    for (int a = first; a <= m; ++a) {
      if (plan.cheapest && s.gpus({a, 1}) >= plan.cheapest->gpus) break;
      if (!s.meets(a, b)) continue;  // attainment fell as pods were added: keep the last b
      b = smallest_meeting(0, b, [&](int y) { return s.meets(a, y); });
      const PairPoint& p = s.at(a, b);
      plan.frontier.push_back(p);
      if (!plan.cheapest || p.gpus < plan.cheapest->gpus) plan.cheapest = p;
      if (b == 1) break;
    }
  }
  plan.evaluated = s.evaluated();
  return plan;
}

nlohmann::json point_json(const PairPoint& p, bool figures) {
  nlohmann::json j = {{"pods", p.pods}, {"gpus", p.gpus}};
  if (figures) {
    j["slo_attainment_pct"] = p.figures.attainment_pct;
    j["goodput_req_s"] = p.figures.goodput_req_s;
    j["throughput_req_s"] = p.figures.throughput_req_s;
    j["ttft_p95_ms"] = p.figures.ttft_p95_ms;
    j["tpot_p50_ms"] = p.figures.tpot_p50_ms;
  }
  return j;
}

// "fleet.pools.prefill.pods" -> "prefill".
std::string pool_of(const std::string& path) {
  const std::string head = "fleet.pools.";
  return path.substr(head.size(), path.size() - head.size() - std::string(".pods").size());
}

}  // namespace

PairPlanResult run_pair_plan(const std::string& path, const PlanOptions& o,
                             const std::array<std::string, 2>& paths) {
  const Scenario base = load_scenario(path, o.overrides);
  for (const auto& p : paths) {
    PlanOptions one = o;
    one.path = p;
    check_plan_options(base, one, path);
    if (p == "fleet.pods") {
      throw ScenarioError(
          "--path fleet.pods: searching two counts needs two pools' "
          "fleet.pools.NAME.pods");
    }
  }
  if (paths[0] == paths[1]) {
    throw ScenarioError("--path " + paths[0] + " given twice: name two different pools");
  }
  {
    std::vector<std::string> sets = o.overrides;
    for (const auto& s : count_sets(paths, {1, 1})) sets.push_back(s);
    load_scenario(path, sets);  // both paths are pod counts the scenario accepts
  }
  PairPlanResult r;
  r.scenario = base.name;
  r.paths = paths;
  r.target_pct = o.target_pct;
  r.max_pods = o.max_pods;
  r.seeds = plan_seeds(base.seed, o.seeds);
  r.arms.resize(base.arms.size());
  rethrow_first(for_each_index(base.arms.size(), o.threads, [&](size_t a) {
    r.arms[a] = search(path, o, a, base.arms[a].name, paths);
  }));
  return r;
}

nlohmann::json pair_plan_json(const PairPlanResult& r) {
  nlohmann::json j = {{"scenario", r.scenario},     {"paths", r.paths},
                      {"target_pct", r.target_pct}, {"max_pods", r.max_pods},
                      {"seeds", r.seeds},           {"arms", nlohmann::json::array()}};
  for (const auto& a : r.arms) {
    nlohmann::json arm = {
        {"arm", a.arm},
        {"cheapest", a.cheapest ? point_json(*a.cheapest, false) : nlohmann::json()},
        {"frontier", nlohmann::json::array()},
        {"evaluated", nlohmann::json::array()}};
    for (const auto& p : a.frontier) arm["frontier"].push_back(point_json(p, false));
    for (const auto& p : a.evaluated) arm["evaluated"].push_back(point_json(p, true));
    j["arms"].push_back(arm);
  }
  return j;
}

void write_pair_plan_report(std::ostream& os, const PairPlanResult& r) {
  const std::array<std::string, 2> pools = {pool_of(r.paths[0]), pool_of(r.paths[1])};
  os << "plan " << r.scenario << ": fewest GPUs over " << r.paths[0] << " x " << r.paths[1]
     << " with SLO attainment >= " << r.target_pct << "%"
     << (r.seeds.size() > 1 ? " (mean of " + std::to_string(r.seeds.size()) + " seeds)" : "")
     << "\n";
  os << std::fixed;
  const auto w0 = static_cast<int>(std::max<size_t>(pools[0].size(), 4) + 2);
  const auto w1 = static_cast<int>(std::max<size_t>(pools[1].size(), 4) + 2);
  for (const auto& a : r.arms) {
    os << a.arm << ": ";
    if (a.cheapest) {
      os << a.cheapest->pods[0] << " " << pools[0] << " + " << a.cheapest->pods[1] << " "
         << pools[1] << " pods, " << a.cheapest->gpus << " GPUs\n";
    } else {
      os << "not met up to " << r.max_pods << " pods in each pool\n";
    }
    os << "  " << std::left << std::setw(w0) << pools[0] << std::setw(w1) << pools[1] << std::right
       << std::setw(6) << "GPUs" << std::setw(8) << "SLO %" << std::setw(12) << "goodput/s"
       << std::setw(10) << "req/s" << std::setw(14) << "TTFT p95 ms" << std::setw(14)
       << "TPOT p50 ms"
       << "\n";
    for (const auto& p : a.evaluated) {
      const bool on_frontier = std::any_of(a.frontier.begin(), a.frontier.end(),
                                           [&](const PairPoint& f) { return f.pods == p.pods; });
      const bool cheapest = a.cheapest && a.cheapest->pods == p.pods;
      const PlanPoint& f = p.figures;
      os << "  " << std::left << std::setw(w0) << p.pods[0] << std::setw(w1) << p.pods[1]
         << std::right << std::setw(6) << p.gpus << std::setprecision(1) << std::setw(8)
         << f.attainment_pct << std::setprecision(2) << std::setw(12) << f.goodput_req_s
         << std::setw(10) << f.throughput_req_s << std::setprecision(0) << std::setw(14)
         << f.ttft_p95_ms << std::setprecision(1) << std::setw(14) << f.tpot_p50_ms
         << (cheapest      ? "  <- cheapest"
             : on_frontier ? "  <- frontier"
                           : "")
         << "\n";
    }
  }
}

}  // namespace fleetsim
