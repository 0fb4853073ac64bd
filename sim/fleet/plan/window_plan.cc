#include "sim/fleet/plan/window_plan.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "sim/errors.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/pod_schedule.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {
namespace {

// Measured requests arriving in each window, and those of them that met their SLO.
struct WindowCounts {
  std::vector<std::int64_t> good, total;
  void add(const std::vector<RequestRecord>& records, const SloSpec& slo, TimeNs window) {
    for (const RequestRecord& r : records) {
      if (r.arrival < 0 || !r.measured) continue;
      const auto w = static_cast<size_t>(r.arrival / window);
      if (w >= total.size()) {
        total.resize(w + 1);
        good.resize(w + 1);
      }
      ++total[w];
      if (meets_slo(r, slo.for_class(r.slo_class))) ++good[w];
    }
  }
  double pct(size_t w) const {
    const std::int64_t n = w < total.size() ? total[w] : 0;
    return n > 0 ? 100.0 * static_cast<double>(good[w]) / static_cast<double>(n) : 100.0;
  }
};

// What the plan scales: the fleet's pods, or one pool's (the other pools keep what the arm gives
// them, their HPAs included).
struct Scaled {
  std::string pods_path;  // fleet.pods or fleet.pools.NAME.pods
  std::string pool;       // empty: the fleet
  // The pool's HPA given as the one HPA (`pool: NAME`), where the scenario's autoscaling names
  // one pool and so takes no `pools` entry.
  bool single = false;

  explicit Scaled(const std::string& path) : pods_path(path) {
    const std::string prefix = "fleet.pools.";
    if (path.starts_with(prefix)) {
      pool = path.substr(prefix.size(), path.size() - prefix.size() - std::string(".pods").size());
    }
  }
  std::string pods(int n) const { return pods_path + "=" + std::to_string(n); }
  // The arms' own HPAs (for the pool) replaced, so the pods are what the runs set them to; every
  // arm's, as a pod count outside another arm's bounds would make the scenario invalid. By
  // index: an arm's name may hold a dot.
  void set_hpas(std::vector<std::string>& sets, size_t arms, const std::string& yaml_map) const {
    const std::string value = single ? "{pool: " + pool + ", " + yaml_map.substr(1) : yaml_map;
    for (size_t arm = 0; arm < arms; ++arm) {
      sets.push_back("arms." + std::to_string(arm) + ".autoscaling" +
                     (pool.empty() || single ? "" : ".pools." + pool) + "=" + value);
    }
  }
  const HpaSpec& hpa_of(const ArmSpec& arm) const {
    for (const HpaSpec& h : arm.autoscaling) {
      if (pool.empty() || h.pool_name == pool) return h;
    }
    throw InternalError("a schedule without its HPA");
  }
  // For the plan of `o.path` on `base`. A scenario whose autoscaling names one pool (`pool: X`)
  // takes no `pools` entry beside it: the planned pool's schedule then replaces that one HPA,
  // which is refused when an arm scales another pool with it.
  static Scaled choose(const std::string& path, const PlanOptions& o, const Scenario& base) {
    Scaled s(o.path);
    if (s.pool.empty()) return s;
    std::vector<std::string> sets = o.overrides;
    s.set_hpas(sets, base.arms.size(), "{metric: none, schedule: ''}");
    try {
      load_scenario(path, sets);
      return s;
    } catch (const ScenarioError& e) {
      for (const ArmSpec& a : base.arms) {
        for (const HpaSpec& h : a.autoscaling) {
          if (h.pool_name == s.pool) continue;
          throw ScenarioError(std::string(e.what()) + "; to plan --path " + o.path +
                              " beside pool " + h.pool_name + "'s HPA, write the autoscaling as " +
                              "pools: {" + h.pool_name + ": {...}}");
        }
      }
      s.single = true;
      return s;
    }
  }
  const PodTime& time(const AutoscalingSummary& a) const {
    if (pool.empty()) return a.fleet;
    for (const PoolScaling& p : a.pools) {
      if (p.pool == pool) return p.pods;
    }
    throw InternalError("no GPU time for pool " + pool);
  }
};

// More windows than a day of minutes is a typo (and a run per window to trim them).
constexpr size_t kMaxWindows = 1440;

// Runs the arm on static fleets, memoised by pod count, over every seed.
class StaticRuns {
 public:
  StaticRuns(const std::string& path, const PlanOptions& o, const Scaled& scaled, size_t arms,
             size_t arm, TimeNs window)
      : path_(path), o_(o), scaled_(scaled), arms_(arms), arm_(arm), window_(window) {}

  const WindowCounts& at(int pods) {
    if (const auto it = runs_.find(pods); it != runs_.end()) return it->second;
    std::vector<std::string> sets = o_.overrides;
    sets.push_back(scaled_.pods(pods));
    // Its bounds too: the scenario's max_pods bounds what its HPA may do, not the plan.
    const std::string n = std::to_string(pods);
    scaled_.set_hpas(sets, arms_,
                     "{metric: none, schedule: '', min_pods: " + n + ", max_pods: " + n + "}");
    const Scenario s = load_scenario(path_, sets);
    WindowCounts c;
    run_over_seeds(s, arm_, o_.seeds,
                   [&](const ArmResult& a) { c.add(a.records, s.slo, window_); });
    return runs_.emplace(pods, std::move(c)).first->second;
  }
  bool meets(int pods, size_t w) { return at(pods).pct(w) >= o_.target_pct - 1e-9; }
  std::vector<int> evaluated() const {
    std::vector<int> out;
    for (const auto& [pods, c] : runs_) out.push_back(pods);
    return out;
  }
  // Requests arriving in window w in any run so far.
  std::int64_t requests(size_t w) const {
    std::int64_t n = 0;
    for (const auto& [pods, c] : runs_) n = std::max(n, w < c.total.size() ? c.total[w] : 0);
    return n;
  }
  size_t windows() const {
    size_t n = 0;
    for (const auto& [pods, c] : runs_) n = std::max(n, c.total.size());
    return n;
  }

 private:
  std::string path_;
  const PlanOptions& o_;
  Scaled scaled_;
  size_t arms_, arm_;
  TimeNs window_;
  std::map<int, WindowCounts> runs_;
};

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

// Window w wants its pods from `lead_s` before its start (a new pod's way to Ready) to its end;
// the schedule is the highest want at each time, as steps, equal neighbours merged. A fall
// waits for the end of the window above it; a rise comes early.
std::string schedule_text(const std::vector<int>& pods, double window_s, double lead_s) {
  const auto start = [&](size_t w) {
    return std::max(0.0, static_cast<double>(w) * window_s - lead_s);
  };
  std::vector<double> times;
  for (size_t w = 0; w < pods.size(); ++w) {
    times.push_back(start(w));
    if (w + 1 < pods.size()) times.push_back(static_cast<double>(w + 1) * window_s);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  std::string out;
  int last = -1;
  for (const double t : times) {
    int want = 0;
    for (size_t w = 0; w < pods.size(); ++w) {
      if (t >= start(w) && t < static_cast<double>(w + 1) * window_s)
        want = std::max(want, pods[w]);
    }
    if (want == last) continue;
    if (!out.empty()) out += ", ";
    out += number(t) + ":" + std::to_string(want);
    last = want;
  }
  return out;
}

struct ScheduledRun {
  std::string schedule;
  WindowCounts counts;
  ScheduleCheck check;
};

// Runs the arm with a schedule of `pods` per window (autoscaling with no metric), over the seeds.
class ScheduledRuns {
 public:
  // to_zero: windows without requests want no pod, and the pool may scale to zero where the
  // gateway holds requests for a pod to come (gateway.hold_for_endpoints_s), as KEDA's does.
  ScheduledRuns(const std::string& path, const PlanOptions& o, const Scaled& scaled, size_t arms,
                size_t arm, double window_s, bool to_zero)
      : path_(path), o_(o), scaled_(scaled), arms_(arms), arm_(arm), window_s_(window_s) {
    // The arm's HPA settings (the scenario's provisioning and load times) under a placeholder.
    std::vector<std::string> sets = o.overrides;
    scaled_.set_hpas(sets, arms_, "{metric: none, min_pods: 1, schedule: '0:1'}");
    const Scenario probe = load_scenario(path, sets);
    const Params& hpa = scaled_.hpa_of(probe.arms[arm]).params;
    lead_s_ = hpa.get_double("sync_period_s") + hpa.get_double("provision_s") +
              hpa.get_double("load_time_s");
    min_pods_ = to_zero && probe.arms[arm].gateway.get_double("hold_for_endpoints_s") > 0 ? 0 : 1;
    // From zero, KEDA's activation check comes first.
    if (min_pods_ == 0) lead_s_ += hpa.get_double("activation_interval_s");
  }
  double lead_s() const { return lead_s_; }

  ScheduledRun run(const std::vector<int>& pods) const {
    ScheduledRun out;
    out.schedule = schedule_text(pods, window_s_, lead_s_);
    const int peak = *std::max_element(pods.begin(), pods.end());
    std::vector<std::string> sets = o_.overrides;
    sets.push_back(scaled_.pods(std::max(1, pods.front())));
    scaled_.set_hpas(sets, arms_,
                     "{metric: none, min_pods: " + std::to_string(min_pods_) + ", max_pods: " +
                         std::to_string(std::max(1, peak)) + ", schedule: '" + out.schedule + "'}");
    const Scenario s = load_scenario(path_, sets);
    ScheduleCheck& check = out.check;
    run_over_seeds(s, arm_, o_.seeds, [&](const ArmResult& a) {
      out.counts.add(a.records, s.slo, sec_to_ns(window_s_));
      const PodTime& t = scaled_.time(*a.summary.autoscaling);
      check.pod_hours += t.pod_seconds / 3600.0;
      check.peak_pods += t.peak_pods;
      const double run_s = t.mean_pods > 0 ? t.pod_seconds / t.mean_pods : 0.0;
      check.static_pod_hours += peak * run_s / 3600.0;
    });
    std::int64_t good = 0, total = 0;
    for (size_t w = 0; w < out.counts.total.size(); ++w) {
      good += out.counts.good[w];
      total += out.counts.total[w];
    }
    check.attainment_pct =
        total > 0 ? 100.0 * static_cast<double>(good) / static_cast<double>(total) : 100.0;
    const double n = o_.seeds;
    check.pod_hours /= n;
    check.peak_pods /= n;
    check.static_pod_hours /= n;
    return out;
  }

 private:
  std::string path_;
  const PlanOptions& o_;
  Scaled scaled_;
  size_t arms_, arm_;
  double window_s_;
  double lead_s_ = 0;
  int min_pods_ = 1;
};

// A trial keeps every window that met the target meeting it (and none that missed worse).
bool no_worse(const WindowCounts& trial, const WindowCounts& before, size_t windows,
              double target_pct) {
  for (size_t w = 0; w < windows; ++w) {
    const bool met = before.pct(w) >= target_pct - 1e-9;
    if (met ? trial.pct(w) < target_pct - 1e-9 : trial.pct(w) < before.pct(w)) return false;
  }
  return true;
}

ArmWindowPlan plan_arm(const std::string& path, const PlanOptions& o, const Scaled& scaled,
                       size_t arms, size_t arm, const std::string& name, double window_s) {
  const TimeNs window = sec_to_ns(window_s);
  StaticRuns runs(path, o, scaled, arms, arm, window);
  // Doubling until every window meets the target (or max_pods), then each window's bisection
  // inside the bracket; the runs are shared by all windows.
  int hit = 1;
  for (;;) {
    runs.at(hit);
    bool all = true;
    for (size_t w = 0; w < runs.windows() && all; ++w) all = runs.meets(hit, w);
    if (all || hit == o.max_pods) break;
    hit = std::min(hit * 2, o.max_pods);
  }
  ArmWindowPlan plan;
  plan.arm = name;
  const size_t n = runs.windows();
  if (n > kMaxWindows) {
    throw ScenarioError("--window " + number(window_s) + ": the workload spans " +
                        std::to_string(n) + " windows of it; at most " +
                        std::to_string(kMaxWindows) + " (a longer window)");
  }
  for (size_t w = 0; w < n; ++w) {
    PlanWindow pw;
    pw.start_s = static_cast<double>(w) * window_s;
    pw.end_s = pw.start_s + window_s;
    if (runs.requests(w) == 0) {
      pw.pods_needed = 0;  // nothing to serve
    } else if (runs.meets(hit, w)) {
      // Bisection between a count known to miss this window and one known to meet it.
      int lo = 0, hi = hit;
      for (const int pods : runs.evaluated()) {
        if (pods < hi && runs.meets(pods, w)) hi = pods;
      }
      for (const int pods : runs.evaluated()) {
        if (pods < hi && !runs.meets(pods, w)) lo = std::max(lo, pods);
      }
      while (hi - lo > 1) {
        const int mid = lo + (hi - lo) / 2;
        (runs.meets(mid, w) ? hi : lo) = mid;
      }
      pw.pods_needed = hi;
    }
    const WindowCounts& at = runs.at(std::max(1, pw.pods_needed.value_or(hit)));
    pw.requests = (w < at.total.size() ? at.total[w] : 0) / o.seeds;
    pw.attainment_pct = at.pct(w);
    plan.windows.push_back(pw);
  }
  plan.evaluated = runs.evaluated();
  const bool all_met = std::all_of(plan.windows.begin(), plan.windows.end(),
                                   [](const PlanWindow& w) { return w.pods_needed.has_value(); });
  if (!all_met || plan.windows.empty()) return plan;

  // The schedule, run with its pods' lifecycle. A static fleet judges a window with the backlog
  // its own size left from the window before; under the schedule that backlog may be gone, so
  // each window's count is lowered while that saves GPU time and no window's attainment
  // suffers for it.
  const bool idle_window = std::any_of(plan.windows.begin(), plan.windows.end(),
                                       [](const PlanWindow& w) { return *w.pods_needed == 0; });
  ScheduledRuns scheduled(path, o, scaled, arms, arm, window_s, idle_window);
  plan.lead_s = scheduled.lead_s();
  std::vector<int> pods;
  for (const PlanWindow& w : plan.windows) pods.push_back(*w.pods_needed);
  ScheduledRun best = scheduled.run(pods);
  // Last window first: lowering a window below the one after it would only dip the schedule.
  for (size_t w = n; w-- > 0;) {
    while (pods[w] > 1) {
      std::vector<int> trial = pods;
      --trial[w];
      ScheduledRun r = scheduled.run(trial);
      // A lower step the HPA's stabilization window hides saves nothing: kept out, so the
      // schedule does not dip where its pods stay anyway.
      if (!no_worse(r.counts, best.counts, n, o.target_pct) ||
          r.check.pod_hours >= best.check.pod_hours - 1e-9) {
        break;
      }
      pods = std::move(trial);
      best = std::move(r);
    }
  }
  plan.schedule = best.schedule;
  const PodSchedule floor = PodSchedule::parse(best.schedule, 0, o.max_pods, "the plan's schedule");
  for (size_t w = 0; w < n; ++w) {
    // The most the schedule asks for inside the window: its pods, or a later window's rise.
    int most = 0;
    for (TimeNs t = sec_to_ns(plan.windows[w].start_s); t < sec_to_ns(plan.windows[w].end_s);
         t = floor.next_step(t)) {
      most = std::max(most, floor.at(t));
    }
    plan.windows[w].scheduled_pods = most;
    plan.windows[w].scheduled_attainment_pct = best.counts.pct(w);
  }
  plan.check = best.check;
  return plan;
}

}  // namespace

WindowPlanResult run_window_plan(const std::string& path, const PlanOptions& o, double window_s) {
  const Scenario base = load_scenario(path, o.overrides);
  check_plan_options(base, o, path);
  if (!(window_s > 0) || window_s > 1e9) {
    throw ScenarioError("--window: expected seconds in (0, 1e9], got " + number(window_s));
  }
  if (!base.slo.percentiles.empty()) {
    throw ScenarioError(path +
                        ": plan --window judges SLO attainment window by window; the slo "
                        "section's percentile targets (" +
                        base.slo.percentiles.front().key +
                        ", ...) bound whole runs: plan without --window, or drop them");
  }
  WindowPlanResult r;
  r.scenario = base.name;
  r.path = o.path;
  r.target_pct = o.target_pct;
  r.max_pods = o.max_pods;
  r.window_s = window_s;
  r.seeds = plan_seeds(base.seed, o.seeds);
  r.arms.resize(base.arms.size());
  const Scaled scaled = Scaled::choose(path, o, base);
  rethrow_first(for_each_index(base.arms.size(), o.threads, [&](size_t a) {
    r.arms[a] = plan_arm(path, o, scaled, base.arms.size(), a, base.arms[a].name, window_s);
  }));
  return r;
}

nlohmann::json window_plan_json(const WindowPlanResult& r) {
  nlohmann::json j = {{"scenario", r.scenario},         {"path", r.path},
                      {"target_pct", r.target_pct},     {"max_pods", r.max_pods},
                      {"window_s", r.window_s},         {"seeds", r.seeds},
                      {"arms", nlohmann::json::array()}};
  for (const ArmWindowPlan& a : r.arms) {
    nlohmann::json arm = {
        {"arm", a.arm}, {"evaluated", a.evaluated}, {"windows", nlohmann::json::array()}};
    for (const PlanWindow& w : a.windows) {
      arm["windows"].push_back(
          {{"start_s", w.start_s},
           {"end_s", w.end_s},
           {"requests", w.requests},
           {"pods_needed", w.pods_needed ? nlohmann::json(*w.pods_needed) : nlohmann::json()},
           {"slo_attainment_pct", w.attainment_pct},
           {"scheduled_pods", a.check ? nlohmann::json(w.scheduled_pods) : nlohmann::json()},
           {"scheduled_slo_attainment_pct",
            a.check ? nlohmann::json(w.scheduled_attainment_pct) : nlohmann::json()}});
    }
    arm["schedule"] = a.schedule.empty() ? nlohmann::json() : nlohmann::json(a.schedule);
    arm["lead_s"] = a.lead_s;
    arm["check"] = a.check ? nlohmann::json{{"slo_attainment_pct", a.check->attainment_pct},
                                            {"pod_hours", a.check->pod_hours},
                                            {"peak_pods", a.check->peak_pods},
                                            {"static_peak_pod_hours", a.check->static_pod_hours}}
                           : nlohmann::json();
    j["arms"].push_back(std::move(arm));
  }
  return j;
}

void write_window_plan_report(std::ostream& os, const WindowPlanResult& r) {
  os << "plan " << r.scenario << ": fewest " << r.path << " per " << number(r.window_s)
     << " s window with SLO attainment >= " << r.target_pct << "%"
     << (r.seeds.size() > 1 ? " (mean of " + std::to_string(r.seeds.size()) + " seeds)" : "")
     << "\n";
  os << std::fixed;
  for (const ArmWindowPlan& a : r.arms) {
    os << a.arm << ":\n  " << std::left << std::setw(16) << "window s" << std::right
       << std::setw(10) << "requests" << std::setw(13) << "static pods" << std::setw(8) << "SLO %"
       << std::setw(16) << "schedule pods" << std::setw(8) << "SLO %"
       << "\n";
    for (const PlanWindow& w : a.windows) {
      os << "  " << std::left << std::setw(16) << (number(w.start_s) + "-" + number(w.end_s))
         << std::right << std::setw(10) << w.requests << std::setw(7) << std::setw(13)
         << (w.pods_needed ? std::to_string(*w.pods_needed) : ">" + std::to_string(r.max_pods))
         << std::setprecision(1) << std::setw(8) << w.attainment_pct;
      if (a.check) {
        os << std::setw(16) << w.scheduled_pods << std::setw(8) << w.scheduled_attainment_pct;
      }
      os << "\n";
    }
    if (!a.check) {
      os << (a.windows.empty() ? std::string("  no schedule: no measured request arrived\n")
                               : "  no schedule: a window is not met up to " +
                                     std::to_string(r.max_pods) + " pods\n");
      continue;
    }
    os << std::setprecision(0) << "  schedule (rises " << a.lead_s
       << " s early, a new pod's way to Ready): " << a.schedule << "\n"
       << std::setprecision(1) << "  with it: SLO " << a.check->attainment_pct << "%, "
       << std::setprecision(2) << a.check->pod_hours
       << " pod-hours; its peak held all along: " << a.check->static_pod_hours << " pod-hours\n";
  }
}

}  // namespace fleetsim
