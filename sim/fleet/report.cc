#include "sim/fleet/report.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <set>
#include <sstream>
#include <string_view>

#include "models/mig.h"
#include "sim/csv.h"
#include "sim/errors.h"
#include "sim/fleet/arm_metrics.h"

namespace fleetsim {
namespace {

// Six decimals keep the JSON byte-identical across runs and readable; no figure here needs more.
double rounded(double x) { return std::round(x * 1e6) / 1e6; }

// Metrics the run table prints in sections of their own, shown only where they apply.
constexpr std::array<const char*, 2> kOffloadMetrics = {"kv_offload_reuse_pct",
                                                        "combined_reuse_pct"};
constexpr std::array<const char*, 2> kGoodputMetrics = {"slo_attainment_pct", "goodput_req_s"};

bool in_own_section(std::string_view name) {
  const auto named = [name](const char* m) { return name == m; };
  return std::any_of(kOffloadMetrics.begin(), kOffloadMetrics.end(), named) ||
         std::any_of(kGoodputMetrics.begin(), kGoodputMetrics.end(), named);
}

// null where the statistic is undefined (of no requests).
nlohmann::json figure_json(double v, bool defined) {
  return defined ? nlohmann::json(rounded(v)) : nlohmann::json();
}

nlohmann::json pct_json(const Percentiles& p) {
  const bool any = p.count > 0;
  return {{"mean", figure_json(p.mean, any)},
          {"p50", figure_json(p.p50, any)},
          {"p95", figure_json(p.p95, any)},
          {"p99", figure_json(p.p99, any)}};
}

nlohmann::json slo_json(const SloSpec& slo) {
  auto targets = [](const SloTargets& t) {
    return nlohmann::json{{"ttft_ms", rounded(t.ttft_ms)},
                          {"tpot_ms", rounded(t.tpot_ms)},
                          {"e2e_ms", rounded(t.e2e_ms)}};
  };
  nlohmann::json out = targets(slo.targets);
  nlohmann::json classes = nlohmann::json::object();
  for (const auto& [name, t] : slo.classes) classes[name] = targets(t);
  out["classes"] = classes;
  return out;
}

nlohmann::json pod_time_json(const PodTime& t) {
  return {{"pod_hours", rounded(t.pod_seconds / 3600.0)},
          {"gpu_hours", rounded(t.gpu_seconds / 3600.0)},
          {"mean_pods", rounded(t.mean_pods)},
          {"peak_pods", t.peak_pods},
          {"pods_added", t.pods_added},
          {"pods_removed", t.pods_removed},
          {"scale_ups", t.scale_ups},
          {"scale_downs", t.scale_downs}};
}

nlohmann::json autoscaling_json(const AutoscalingSummary& a) {
  nlohmann::json pools = nlohmann::json::array();
  for (const PoolScaling& p : a.pools) {
    nlohmann::json timeline = nlohmann::json::array();
    for (const auto& point : p.timeline) {
      timeline.push_back(
          {{"t_s", rounded(point.t_s)},
           {"metric",
            std::isnan(point.metric) ? nlohmann::json() : nlohmann::json(rounded(point.metric))},
           {"recommended", point.recommended},
           {"desired", point.desired},
           {"ready", point.ready},
           {"provisioned", point.provisioned}});
    }
    nlohmann::json entry = {{"pool", p.pool},
                            {"metric", p.metric},
                            {"target", rounded(p.target)},
                            {"min_pods", p.min_pods},
                            {"max_pods", p.max_pods}};
    if (!p.schedule.empty()) entry["schedule"] = p.schedule;
    entry.update(pod_time_json(p.pods));
    entry["timeline"] = std::move(timeline);
    pools.push_back(std::move(entry));
  }
  nlohmann::json out = pod_time_json(a.fleet);
  out["pools"] = std::move(pools);
  return out;
}

}  // namespace

std::string fixed_text(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  std::ostringstream os;
  os << std::fixed << std::setprecision(decimals) << v;
  return os.str();
}

nlohmann::json summary_json(const ArmSummary& s) {
  nlohmann::json per_pod = nlohmann::json::array();
  for (const auto& p : s.per_pod) {
    per_pod.push_back({{"pod", p.pod},
                       {"requests", p.requests},
                       {"prefix_cache_queries", p.prefix_cache_queries},
                       {"prefix_cache_hits", p.prefix_cache_hits},
                       {"preemptions", p.preemptions}});
    if (s.kv_offload) {
      per_pod.back()["external_prefix_cache_queries"] = p.external_prefix_cache_queries;
      per_pod.back()["external_prefix_cache_hits"] = p.external_prefix_cache_hits;
    }
  }
  nlohmann::json counters = nlohmann::json::object();
  for (const auto& c : s.policy_counters) counters[c.name] = rounded(c.value);
  nlohmann::json gateway = nlohmann::json::object();
  for (const auto& c : s.gateway_counters) gateway[c.name] = rounded(c.value);
  nlohmann::json out = {
      {"requests", s.requests},
      {"completed", s.completed},
      {"failed", s.failed},
      {"unfinished", s.unfinished},
      {"prefix_cache_reuse", rounded(s.prefix_cache_reuse)},
      {"ttft_ms", pct_json(s.ttft_ms)},
      {"warm_ttft_ms", pct_json(s.warm_ttft_ms)},
      {"e2e_ms", pct_json(s.e2e_ms)},
      {"warm_e2e_ms", pct_json(s.warm_e2e_ms)},
      {"tpot_ms", pct_json(s.tpot_ms)},
      {"max_itl_ms", pct_json(s.max_itl_ms)},
      {"throughput_req_s", rounded(s.throughput_req_s)},
      {"output_tokens_per_s", rounded(s.output_tokens_per_s)},
      {"duration_s", rounded(s.duration_s)},
      {"per_pod", per_pod},
      {"routing",
       {{"concentration_ratio", rounded(s.routing.concentration_ratio)},
        {"concentration_ratio_max", rounded(s.routing.concentration_ratio_max)},
        {"same_pod_as_previous_turn",
         figure_json(s.routing.same_pod_as_previous_turn, s.routing.later_turns > 0)},
        {"conversations_on_one_pod",
         figure_json(s.routing.conversations_on_one_pod, s.routing.multi_turn > 0)}}},
      {"policy_counters", counters},
      {"gateway_counters", gateway}};
  // Keys that exist only for fleets with pools and gateways with several replicas, so the
  // results of every other scenario keep their exact bytes.
  if (!s.per_pool.empty()) {
    nlohmann::json pools = nlohmann::json::array();
    for (const auto& p : s.per_pool) {
      pools.push_back({{"pool", p.pool},
                       {"gpu", p.gpu},
                       {"model", p.model},
                       {"pods", p.pods},
                       {"requests", p.requests},
                       {"completed", p.completed},
                       {"failed", p.failed},
                       {"unfinished", p.unfinished},
                       {"prefix_cache_reuse", rounded(p.prefix_cache_reuse)},
                       {"ttft_ms", pct_json(p.ttft_ms)},
                       {"tpot_ms", pct_json(p.tpot_ms)},
                       {"e2e_ms", pct_json(p.e2e_ms)}});
    }
    out["per_pool"] = pools;
  }
  if (!s.per_tenant.empty()) {
    nlohmann::json tenants = nlohmann::json::array();
    for (const auto& t : s.per_tenant) {
      tenants.push_back({{"tenant", t.tenant},
                         {"requests", t.requests},
                         {"completed", t.completed},
                         {"failed", t.failed},
                         {"unfinished", t.unfinished},
                         {"ttft_ms", pct_json(t.ttft_ms)},
                         {"tpot_ms", pct_json(t.tpot_ms)},
                         {"e2e_ms", pct_json(t.e2e_ms)}});
    }
    out["per_tenant"] = tenants;
  }
  if (!s.replicas.routed.empty()) {
    out["gateway_replicas"] = {{"replicas", s.replicas.routed.size()},
                               {"assignment", s.replicas.assignment},
                               {"routed", s.replicas.routed}};
  }
  if (s.goodput) {
    const GoodputSummary& g = *s.goodput;
    nlohmann::json classes = nlohmann::json::array();
    for (const auto& c : g.per_class) {
      classes.push_back({{"slo_class", c.slo_class},
                         {"requests", c.requests},
                         {"good", c.good},
                         {"slo_attainment", rounded(c.attainment)}});
    }
    out["goodput"] = {{"requests", g.requests},
                      {"good", g.good},
                      {"slo_attainment", rounded(g.attainment)},
                      {"goodput_req_s", rounded(g.goodput_req_s)},
                      {"per_class", classes}};
    if (!g.percentiles.empty()) {
      nlohmann::json targets = nlohmann::json::array();
      for (const PercentileOutcome& p : g.percentiles) {
        targets.push_back(
            {{"metric", p.key},
             {"target_ms", p.target_ms},
             {"value_ms",
              std::isfinite(p.value_ms) ? nlohmann::json(rounded(p.value_ms)) : nlohmann::json()},
             {"met", p.met}});
      }
      out["goodput"]["percentile_targets"] = targets;
      out["goodput"]["percentile_targets_met"] = g.percentiles_met();
    }
  }
  if (s.autoscaling) out["autoscaling"] = autoscaling_json(*s.autoscaling);
  if (s.spec_decode) {
    out["spec_decode"] = {
        {"num_drafts", s.spec_decode->num_drafts},
        {"num_draft_tokens", s.spec_decode->num_draft_tokens},
        {"num_accepted_tokens", s.spec_decode->num_accepted_tokens},
        {"mean_acceptance_length", rounded(s.spec_decode->mean_acceptance_length)},
        {"draft_acceptance_rate", rounded(s.spec_decode->draft_acceptance_rate)}};
  }
  if (s.kv_offload) {
    out["kv_offload"] = {{"external_prefix_cache_queries", s.kv_offload->queries},
                         {"external_prefix_cache_hits", s.kv_offload->hits},
                         {"reuse", rounded(s.kv_offload->reuse)},
                         {"combined_reuse", rounded(s.kv_offload->combined_reuse)}};
  }
  return out;
}

bool has_goodput(const RunResult& r) {
  return !r.arms.empty() && r.arms.front().summary.goodput.has_value();
}

namespace {

// What a pool's pods have beyond their GPU cache and step budget, for the table's header.
std::string pod_extras(const PoolFacts& p) {
  std::string out;
  if (p.role != PodRole::kBoth) {
    out += "  " + pod_role_names()[static_cast<size_t>(p.role)] + " pods";
  }
  if (p.forced_block_size > 0) {
    out += "  blocks of " + std::to_string(p.forced_block_size) + " tokens (MLA kernels)";
  }
  if (p.window_blocks_per_request > 0) {
    out += "  + sliding-window layers <= " + std::to_string(p.window_blocks_per_request) +
           " blocks/request";
  }
  if (p.host_kv_blocks_per_pod > 0) {
    out += "  host KV " + std::to_string(p.host_kv_blocks_per_pod) + " blocks/pod (" +
           fixed_text(p.host_kv_gib_per_pod, 1) + " GiB)";
  }
  if (p.num_speculative_tokens > 0) {
    out += "  " + p.speculative_method + " " + std::to_string(p.num_speculative_tokens) + " drafts";
  }
  if (p.allreduce_through_host) out += "  all-reduce through host memory (no GPU P2P)";
  if (p.allreduce_through_nccl) out += "  all-reduce through NCCL over PCIe";
  if (p.expert_parallel) out += "  experts spread whole (expert parallel)";
  if (p.pipeline_parallel_size > 1) {
    out += "  " + std::to_string(p.pipeline_parallel_size) + " pipeline stages";
  }
  return out;
}

// The same, for the result's fleet or pool object (only what is set, so older readers see no
// change).
void add_pod_extras(nlohmann::json& j, const PoolFacts& p) {
  if (p.role != PodRole::kBoth) j["role"] = pod_role_names()[static_cast<size_t>(p.role)];
  if (p.forced_block_size > 0) j["kv_block_size"] = p.forced_block_size;
  if (p.window_blocks_per_request > 0) {
    j["window_blocks_per_request"] = p.window_blocks_per_request;
  }
  if (p.host_kv_blocks_per_pod > 0) {
    j["host_kv_blocks_per_pod"] = p.host_kv_blocks_per_pod;
    j["host_kv_gib_per_pod"] = rounded(p.host_kv_gib_per_pod);
  }
  if (p.num_speculative_tokens > 0) {
    j["speculative_method"] = p.speculative_method;
    j["num_speculative_tokens"] = p.num_speculative_tokens;
  }
  if (p.allreduce_through_host) j["allreduce_path"] = "host";
  if (p.allreduce_through_nccl) j["allreduce_via"] = "nccl_pcie";
  if (p.expert_parallel) j["expert_parallel"] = true;
  if (p.pipeline_parallel_size > 1) j["pipeline_parallel_size"] = p.pipeline_parallel_size;
}

// How the pool's pods sit on GPUs, where it is not one pod a GPU of its own.
void add_gpu_sharing(nlohmann::json& j, const PoolSpec& pool, const FleetSpec& fleet) {
  if (pool.pods_per_gpu > 1) j["pods_per_gpu"] = pool.pods_per_gpu;
  if (pool.gpu_sharing == GpuSharing::kTimeSlicing) return;
  j["gpu_sharing"] = gpu_sharing_names()[static_cast<size_t>(pool.gpu_sharing)];
  if (pool.gpu_sharing == GpuSharing::kMps) {
    j["mps_active_thread_percentage"] = pool.mps_active_thread_percentage > 0
                                            ? pool.mps_active_thread_percentage
                                            : 100 / pool.pods_per_gpu;
  } else if (const auto profile = mig_profile(find_gpu(fleet.gpus, pool.gpu), pool.pods_per_gpu)) {
    j["mig_profile"] = profile->name();
  }
}

}  // namespace

nlohmann::json result_json(const RunResult& r, const Scenario& s) {
  nlohmann::json arms = nlohmann::json::array();
  for (const auto& a : r.arms) {
    nlohmann::json arm = {
        {"name", a.name}, {"policy", a.policy}, {"summary", summary_json(a.summary)}};
    if (auto it = s.measured.find(a.name); it != s.measured.end()) arm["measured"] = it->second;
    if (!a.failures.is_null()) arm["failures"] = a.failures;
    if (!a.warnings.empty()) arm["warnings"] = a.warnings;
    arms.push_back(std::move(arm));
  }
  nlohmann::json fleet = {{"pods", s.fleet.pods},
                          {"gpu", s.fleet.gpu},
                          {"model", s.fleet.model},
                          {"weight_gib_per_gpu", rounded(r.fleet.weight_gib_per_gpu)},
                          {"kv_blocks_per_pod", r.fleet.kv_blocks_per_pod},
                          {"kv_gib_per_pod", rounded(r.fleet.kv_gib_per_pod)},
                          {"max_num_batched_tokens", r.fleet.max_num_batched_tokens},
                          {"max_num_seqs", r.fleet.max_num_seqs}};
  if (!r.fleet.pools.empty()) add_pod_extras(fleet, r.fleet.pools.front());
  if (s.fleet.pools.empty()) add_gpu_sharing(fleet, fleet_pools(s.fleet).front(), s.fleet);
  if (!s.fleet.pools.empty()) {
    nlohmann::json pools = nlohmann::json::array();
    for (size_t i = 0; i < r.fleet.pools.size(); ++i) {
      const PoolFacts& p = r.fleet.pools[i];
      pools.push_back({{"name", p.name},
                       {"pods", p.pods},
                       {"gpu", p.gpu},
                       {"model", p.model},
                       {"weight_gib_per_gpu", rounded(p.weight_gib_per_gpu)},
                       {"kv_blocks_per_pod", p.kv_blocks_per_pod},
                       {"kv_gib_per_pod", rounded(p.kv_gib_per_pod)},
                       {"max_num_batched_tokens", p.max_num_batched_tokens},
                       {"max_num_seqs", p.max_num_seqs}});
      add_pod_extras(pools.back(), p);
      if (i < s.fleet.pools.size()) add_gpu_sharing(pools.back(), s.fleet.pools[i], s.fleet);
    }
    fleet["pools"] = pools;
  }
  nlohmann::json out = {
      {"scenario", r.scenario}, {"seed", r.seed}, {"fleet", fleet}, {"arms", arms}};
  if (s.slo.enabled) out["slo"] = slo_json(s.slo);
  return out;
}

namespace {

// How the pods of `pool` share a GPU, when they do: ", MPS", ", MIG 1g, 1/4 of the memory".
std::string sharing_label(const PoolSpec& pool, const FleetSpec& fleet) {
  if (pool.gpu_sharing == GpuSharing::kMps && pool.pods_per_gpu > 1) return ", MPS";
  if (pool.gpu_sharing != GpuSharing::kMig) return "";
  const auto profile = mig_profile(find_gpu(fleet.gpus, pool.gpu), pool.pods_per_gpu);
  return profile ? ", MIG " + profile->name() : ", MIG";
}

// "3 x A100" for a pod a GPU; else the GPUs the pods take and why: "4 pods on 2 x RTX-PRO-6000
// (2 a GPU)", "(2 a GPU, MPS)", "2 pods on 4 x H100-SXM (TP 2)", "(TP 2, 2 a GPU)", "(TP 4 x PP
// 2)".
std::string pods_on_gpus(const PoolFacts& p, const PoolSpec& pool, const FleetSpec& fleet) {
  const std::int32_t tp = std::max(1, p.tensor_parallel_size);
  const std::int32_t pp = std::max(1, p.pipeline_parallel_size);
  const std::int32_t per_gpu = pool.pods_per_gpu;
  const std::string sharing = sharing_label(pool, fleet);
  if (tp == 1 && pp == 1 && per_gpu <= 1 && sharing.empty()) {
    return std::to_string(p.pods) + " x " + p.gpu;
  }
  const std::int64_t gpus = pool_gpus(p, per_gpu);
  std::string how = tp > 1 ? "TP " + std::to_string(tp) : "";
  if (pp > 1) how += (how.empty() ? "PP " : " x PP ") + std::to_string(pp);
  if (per_gpu > 1 || (tp == 1 && pp == 1))
    how += (how.empty() ? "" : ", ") + std::to_string(per_gpu) + " a GPU";
  return std::to_string(p.pods) + (p.pods == 1 ? " pod on " : " pods on ") + std::to_string(gpus) +
         " x " + p.gpu + " (" + how + sharing + ")";
}

// A latency of the failures section: "11.59 s", or "-" when it never happened.
std::string seconds_or_dash(const nlohmann::json& v) {
  return v.is_null() ? std::string("-") : fixed_text(v.get<double>(), 2) + " s";
}

// One row per percentile target of the slo section: "p95 TTFT <= 2000 ms", each arm's value and
// whether it met it ("1843 met", "2410 missed", "inf missed" when too many requests failed).
void write_percentile_rows(std::ostream& os, const RunResult& r, int label_w, int cell_w) {
  const auto& targets = r.arms.front().summary.goodput->percentiles;
  for (size_t i = 0; i < targets.size(); ++i) {
    os << std::setw(label_w) << (targets[i].key + " <= " + fixed_text(targets[i].target_ms, 0));
    for (const auto& a : r.arms) {
      const PercentileOutcome& p = a.summary.goodput->percentiles[i];
      os << std::setw(cell_w)
         << ((std::isinf(p.value_ms) ? std::string("inf") : fixed_text(p.value_ms, 0)) +
             (p.met ? " met" : " missed"));
    }
    os << "\n";
  }
}

}  // namespace

// Per tenant, when requests have tenants and there are few enough to read as rows (the JSON
// has them all): completed/failed, TTFT p95 and TPOT p50, by tenant name.
void write_tenant_rows(std::ostream& os, const RunResult& r, int label_w, int cell_w) {
  constexpr std::size_t kMostRows = 8;
  std::set<std::string> tenants;
  for (const auto& a : r.arms) {
    for (const auto& t : a.summary.per_tenant) tenants.insert(t.tenant);
  }
  if (tenants.empty() || tenants.size() > kMostRows) return;
  for (const auto& name : tenants) {
    for (int k = 0; k < 3; ++k) {
      static const char* const kLabels[] = {"completed/failed", "TTFT p95 ms", "TPOT p50 ms"};
      os << std::setw(label_w)
         << ("  tenant " + (name.empty() ? std::string("(none)") : name) + " " + kLabels[k]);
      for (const auto& a : r.arms) {
        const auto& per = a.summary.per_tenant;
        const auto t = std::find_if(per.begin(), per.end(),
                                    [&](const TenantSummary& x) { return x.tenant == name; });
        const std::string cell =
            t == per.end() ? "-"
            : k == 0       ? std::to_string(t->completed) + "/" + std::to_string(t->failed)
            : k == 1       ? fixed_text(t->ttft_ms.p95, 0)
                           : fixed_text(t->tpot_ms.p50, 1);
        os << std::setw(cell_w) << cell;
      }
      os << "\n";
    }
  }
}

void write_table(std::ostream& os, const RunResult& r, const Scenario& s) {
  if (s.fleet.pools.empty()) {
    os << "scenario " << r.scenario << "  seed " << r.seed << "  "
       << pods_on_gpus(r.fleet.pools.front(), fleet_pools(s.fleet).front(), s.fleet) << "  "
       << s.fleet.model << "  weights " << fixed_text(r.fleet.weight_gib_per_gpu, 1)
       << " GiB/GPU  KV " << r.fleet.kv_blocks_per_pod << " blocks/pod ("
       << fixed_text(r.fleet.kv_gib_per_pod, 1) << " GiB)  step budget "
       << r.fleet.max_num_batched_tokens << " tokens / " << r.fleet.max_num_seqs << " seqs"
       << pod_extras(r.fleet.pools.front()) << "\n";
  } else {
    os << "scenario " << r.scenario << "  seed " << r.seed << "  " << s.fleet.pods << " pods in "
       << r.fleet.pools.size() << " pools\n";
    for (std::size_t i = 0; i < r.fleet.pools.size(); ++i) {
      const auto& p = r.fleet.pools[i];
      const PoolSpec pool = i < s.fleet.pools.size() ? s.fleet.pools[i] : PoolSpec{};
      os << "  pool " << p.name << ": " << pods_on_gpus(p, pool, s.fleet) << "  " << p.model
         << "  weights " << fixed_text(p.weight_gib_per_gpu, 1) << " GiB/GPU  KV "
         << p.kv_blocks_per_pod << " blocks/pod (" << fixed_text(p.kv_gib_per_pod, 1)
         << " GiB)  step budget " << p.max_num_batched_tokens << " tokens / " << p.max_num_seqs
         << " seqs" << pod_extras(p) << "\n";
    }
  }
  const bool any_measured = !s.measured.empty();
  std::size_t longest = 0;
  for (const auto& a : r.arms) longest = std::max(longest, a.name.size());
  // Wide enough for the longest per-class or per-tenant label, so none runs into its figures.
  std::size_t label_len = 29;
  if (has_goodput(r)) {
    for (const auto& a : r.arms) {
      for (const auto& c : a.summary.goodput->per_class) {
        label_len = std::max(label_len, c.slo_class.size() + 19);  // "  NAME SLO attainment %"
      }
    }
  }
  for (const auto& a : r.arms) {
    for (const auto& t : a.summary.per_tenant) {
      label_len = std::max(label_len, t.tenant.size() + 26);  // "  tenant NAME completed/failed"
    }
  }
  const int label_w = static_cast<int>(label_len) + 1;
  const int cell_w = static_cast<int>(
      std::max<std::size_t>(any_measured ? 22 : 12, longest + (any_measured ? 12 : 2)));
  os << std::left << std::setw(label_w) << "metric";
  for (const auto& a : r.arms) {
    os << std::setw(cell_w) << (a.name + (any_measured ? " sim (meas)" : ""));
  }
  os << "\n";
  auto measured_cell = [&](const ArmResult& a, const char* metric, int decimals) {
    const auto arm_it = s.measured.find(a.name);
    if (arm_it == s.measured.end()) return std::string();
    const auto m = arm_it->second.find(metric);
    return m == arm_it->second.end() ? std::string() : " (" + fixed_text(m->second, decimals) + ")";
  };
  // Requests the horizon cut get their count only where there are some.
  const bool cut = std::any_of(r.arms.begin(), r.arms.end(),
                               [](const ArmResult& a) { return a.summary.unfinished > 0; });
  os << std::setw(label_w) << (cut ? "completed/failed/unfinished" : "requests (completed/failed)");
  for (const auto& a : r.arms) {
    os << std::setw(cell_w)
       << std::to_string(a.summary.completed) + "/" + std::to_string(a.summary.failed) +
              (cut ? "/" + std::to_string(a.summary.unfinished) : "") +
              measured_cell(a, "completed", 0);
  }
  os << "\n";
  const auto metric_row = [&](const ArmMetric& metric) {
    os << std::setw(label_w) << metric.label;
    for (const auto& a : r.arms) {
      os << std::setw(cell_w)
         << fixed_text(metric.value(a), metric.decimals) +
                measured_cell(a, metric.name, metric.decimals);
    }
    os << "\n";
  };
  for (const auto& metric : arm_metrics()) {
    if (metric.in_table) metric_row(metric);
  }
  // Figures kept out of the table (they hold only for some scenarios) that the scenario's
  // measured section names, so each measurement shows beside its simulated figure.
  const auto measured_anywhere = [&](const char* metric) {
    return std::any_of(s.measured.begin(), s.measured.end(),
                       [&](const auto& arm) { return arm.second.count(metric) > 0; });
  };
  for (const auto& metric : arm_metrics()) {
    if (!metric.in_table && !in_own_section(metric.name) && measured_anywhere(metric.name)) {
      metric_row(metric);
    }
  }
  // Speculative decoding's yield, when any arm's pods decode speculatively.
  if (std::any_of(r.arms.begin(), r.arms.end(),
                  [](const ArmResult& a) { return a.summary.spec_decode.has_value(); })) {
    os << std::setw(label_w) << "mean acceptance length";
    for (const auto& a : r.arms) {
      os << std::setw(cell_w)
         << (a.summary.spec_decode ? fixed_text(a.summary.spec_decode->mean_acceptance_length, 2)
                                   : "-");
    }
    os << "\n";
  }
  // The host tier, when any arm's pods offload KV blocks to host memory.
  const bool offload = std::any_of(r.arms.begin(), r.arms.end(), [](const ArmResult& a) {
    return a.summary.kv_offload.has_value();
  });
  if (offload) {
    for (const char* name : kOffloadMetrics) {
      const ArmMetric& metric = arm_metric(name);
      os << std::setw(label_w) << metric.label;
      for (const auto& a : r.arms) {
        os << std::setw(cell_w)
           << (a.summary.kv_offload ? fixed_text(metric.value(a), metric.decimals) : "-");
      }
      os << "\n";
    }
  }
  // goodput@SLO, per arm and per SLO class, when the scenario has an slo section.
  if (has_goodput(r)) {
    for (const char* name : kGoodputMetrics) metric_row(arm_metric(name));
    // By class name: a closed-loop arm cut by the horizon may not have reached every class.
    std::set<std::string> classes;
    for (const auto& a : r.arms) {
      for (const auto& c : a.summary.goodput->per_class) classes.insert(c.slo_class);
    }
    for (const auto& name : classes) {
      os << std::setw(label_w)
         << ("  " + (name.empty() ? "(no class)" : name) + " SLO attainment %");
      for (const auto& a : r.arms) {
        const auto& per_class = a.summary.goodput->per_class;
        const auto it = std::find_if(per_class.begin(), per_class.end(),
                                     [&](const SloClassGoodput& c) { return c.slo_class == name; });
        os << std::setw(cell_w)
           << (it == per_class.end() ? "-" : fixed_text(100.0 * it->attainment, 1));
      }
      os << "\n";
    }
    write_percentile_rows(os, r, label_w, cell_w);
  }
  // Per pool and per gateway replica, when the scenario has them.
  if (!r.arms.empty() && !r.arms.front().summary.per_pool.empty()) {
    const auto& pools = r.arms.front().summary.per_pool;
    for (size_t p = 0; p < pools.size(); ++p) {
      for (int k = 0; k < 4; ++k) {
        static const char* const kLabels[] = {"requests", "reuse %", "TTFT p50 ms", "TPOT p50 ms"};
        os << std::setw(label_w) << ("  " + pools[p].pool + " " + kLabels[k]);
        for (const auto& a : r.arms) {
          const PoolSummary& ps = a.summary.per_pool.at(p);
          const std::string cell = k == 0   ? std::to_string(ps.requests)
                                   : k == 1 ? fixed_text(100.0 * ps.prefix_cache_reuse, 1)
                                   : k == 2 ? fixed_text(ps.ttft_ms.p50, 0)
                                            : fixed_text(ps.tpot_ms.p50, 1);
          os << std::setw(cell_w) << cell;
        }
        os << "\n";
      }
    }
  }
  write_tenant_rows(os, r, label_w, cell_w);
  const bool any_replicas = std::any_of(r.arms.begin(), r.arms.end(), [](const ArmResult& a) {
    return !a.summary.replicas.routed.empty();
  });
  if (any_replicas) {
    os << std::setw(label_w) << "requests per gateway replica";
    for (const auto& a : r.arms) {
      std::string cell;
      for (const auto n : a.summary.replicas.routed) {
        cell += (cell.empty() ? "" : "/") + std::to_string(n);
      }
      os << std::setw(cell_w) << (cell.empty() ? std::string("1 replica") : cell);
    }
    os << "\n";
  }
  if (!r.arms.empty() && r.arms.front().summary.autoscaling) {
    // The fleet's totals, then each pool's pods when there are several.
    auto row = [&](const std::string& label, auto cell) {
      os << std::setw(label_w) << label;
      for (const auto& a : r.arms) os << std::setw(cell_w) << cell(*a.summary.autoscaling);
      os << "\n";
    };
    auto mean_peak = [](const PodTime& t) {
      return fixed_text(t.mean_pods, 2) + " / " + std::to_string(t.peak_pods);
    };
    row("pods mean / peak", [&](const AutoscalingSummary& as) { return mean_peak(as.fleet); });
    const size_t pools = r.arms.front().summary.autoscaling->pools.size();
    for (size_t p = 0; pools > 1 && p < pools; ++p) {
      row("  " + r.arms.front().summary.autoscaling->pools[p].pool,
          [&](const AutoscalingSummary& as) { return mean_peak(as.pools[p].pods); });
    }
    // Pods of several GPUs (tensor parallelism) or sharing one hold GPUs and pods differently.
    row("GPU-hours",
        [](const AutoscalingSummary& as) { return fixed_text(as.fleet.gpu_seconds / 3600.0, 2); });
    if (std::any_of(r.arms.begin(), r.arms.end(), [](const ArmResult& a) {
          const PodTime& t = a.summary.autoscaling->fleet;
          return std::abs(t.gpu_seconds - t.pod_seconds) > 1e-6 * std::max(1.0, t.pod_seconds);
        })) {
      row("pod-hours", [](const AutoscalingSummary& as) {
        return fixed_text(as.fleet.pod_seconds / 3600.0, 2);
      });
    }
    row("pods added / removed", [](const AutoscalingSummary& as) {
      return std::to_string(as.fleet.pods_added) + " / " + std::to_string(as.fleet.pods_removed);
    });
  }
  if (any_measured && !s.measured_source.empty()) os << "measured: " << s.measured_source << "\n";
  for (const auto& a : r.arms) {
    if (a.failures.is_null()) continue;
    const auto& f = a.failures;
    os << "\n"
       << a.name << " failures: lost " << f["requests_lost"] << ", retries " << f["retries"]
       << ", errors " << f["errors_by_class"].dump();
    if (!f["failure_window"].is_null()) {
      os << ", window " << fixed_text(f["failure_window"]["first_s"].get<double>(), 2) << "-"
         << fixed_text(f["failure_window"]["last_s"].get<double>(), 2) << " s";
    }
    os << "\n";
    for (const auto& fault : f["faults"]) {
      os << "  " << fault["kind"].get<std::string>() << " " << fault["target"].get<std::string>()
         << " at " << fault["at_s"] << " s: detected after "
         << seconds_or_dash(fault["detection_latency_s"])
         << (fault.contains("detection_latency_all_replicas_s")
                 ? ", by every replica after " +
                       seconds_or_dash(fault["detection_latency_all_replicas_s"])
                 : std::string())
         << " (" << fault["errors_before_detection"] << " errors before), recovered after "
         << seconds_or_dash(fault["recovery_s"]) << "\n";
    }
  }
}

namespace {

// An empty field where a figure is undefined (NaN), as pandas reads a missing value.
std::string csv_number(double v) {
  if (std::isnan(v)) return "";
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string csv_figure(const Percentiles& p, double Percentiles::*statistic) {
  return p.count == 0 ? "" : csv_number(rounded(p.*statistic));
}

}  // namespace

void write_summary_csv(std::ostream& os, const RunResult& r) {
  const bool goodput = has_goodput(r);
  os << "arm,policy,requests,completed,failed,unfinished,prefix_cache_reuse,ttft_p50_ms,"
        "ttft_p95_ms,warm_ttft_p50_ms,warm_ttft_p95_ms,warm_e2e_p50_ms,tpot_p50_ms,"
        "throughput_req_s,output_tokens_per_s"
     << (goodput ? ",slo_attainment,goodput_req_s" : "") << "\n";
  for (const auto& a : r.arms) {
    const ArmSummary& s = a.summary;
    os << csv_field(a.name) << "," << csv_field(a.policy) << "," << s.requests << "," << s.completed
       << "," << s.failed << "," << s.unfinished << "," << rounded(s.prefix_cache_reuse) << ","
       << csv_figure(s.ttft_ms, &Percentiles::p50) << ","
       << csv_figure(s.ttft_ms, &Percentiles::p95) << ","
       << csv_figure(s.warm_ttft_ms, &Percentiles::p50) << ","
       << csv_figure(s.warm_ttft_ms, &Percentiles::p95) << ","
       << csv_figure(s.warm_e2e_ms, &Percentiles::p50) << ","
       << csv_figure(s.tpot_ms, &Percentiles::p50) << "," << rounded(s.throughput_req_s) << ","
       << rounded(s.output_tokens_per_s);
    if (goodput) {
      os << "," << rounded(s.goodput->attainment) << "," << rounded(s.goodput->goodput_req_s);
    }
    os << "\n";
  }
}

void write_requests_csv(std::ostream& os, const RunResult& r) {
  os << "arm,id,conversation,turn,pod,arrival_ms,dispatched_ms,first_token_ms,finished_ms,"
        "prompt_tokens,cached_tokens,output_tokens,status,attempts,measured,tier,slo_class,"
        "tenant,max_itl_ms,prefill_pod,ttft_ms,e2e_ms,tpot_ms\n";
  for (const auto& a : r.arms) {
    for (const auto& q : a.records) {
      if (q.arrival < 0) continue;
      const RequestLatencies l = latencies_of(q);
      os << csv_field(a.name) << "," << q.id << "," << q.conversation << "," << q.turn << ","
         << q.pod << "," << ns_to_ms(q.arrival) << "," << ns_to_ms(q.dispatched) << ","
         << ns_to_ms(q.first_token) << "," << ns_to_ms(q.finished) << "," << q.prompt_tokens << ","
         << q.cached_tokens << "," << q.output_tokens << ","
         << (q.done ? outcome_name(q.outcome) : "unfinished") << "," << q.attempts << ","
         << (q.measured ? 1 : 0) << "," << csv_field(q.tier) << "," << csv_field(q.slo_class) << ","
         << csv_field(q.tenant) << "," << csv_number(l.max_itl_ms) << "," << q.prefill_pod << ","
         << csv_number(l.ttft_ms) << "," << csv_number(l.e2e_ms) << "," << csv_number(l.tpot_ms)
         << "\n";
    }
  }
}

}  // namespace fleetsim
