#include "sim/fleet/arm_metrics.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "sim/errors.h"
#include "sim/named.h"

namespace fleetsim {
namespace {

// Mean (first turns) or lowest (later turns) per-request hit rate in percent: what a probe that
// reads its pod's counters around each single request sees.
double turn_hit_rate(const ArmResult& a, bool first_turn) {
  double sum = 0;
  double low = 100;
  std::int64_t n = 0;
  for (const auto& q : a.records) {
    if (q.arrival < 0 || !q.measured || !q.done || q.outcome != Outcome::kOk) continue;
    if ((q.turn == 1) != first_turn || q.prompt_tokens <= 0) continue;
    const double rate = 100.0 * static_cast<double>(q.cached_tokens) / q.prompt_tokens;
    sum += rate;
    low = std::min(low, rate);
    ++n;
  }
  if (n == 0) {
    throw ScenarioError("arm " + a.name + " has no " + (first_turn ? "first" : "later") +
                        " turns to take a hit rate of");
  }
  return first_turn ? sum / static_cast<double>(n) : low;
}

// A statistic of no requests (warm TTFT where no conversation has a second turn) is undefined:
// NaN, which the table prints as n/a and a campaign's "every metric defined" gate refuses.
double of(const Percentiles& p, double Percentiles::*statistic) {
  return p.count > 0 ? p.*statistic : std::numeric_limits<double>::quiet_NaN();
}

const GoodputSummary& goodput_of(const ArmResult& a) {
  if (!a.summary.goodput) {
    throw ScenarioError("arm " + a.name +
                        " has no goodput: the scenario needs an slo section (docs/scenarios.md)");
  }
  return *a.summary.goodput;
}

}  // namespace

const std::vector<ArmMetric>& arm_metrics() {
  static const std::vector<ArmMetric> kTable = {
      {"completed", "requests completed", 0, "requests that ended with their last token",
       [](const ArmResult& a) { return static_cast<double>(a.summary.completed); }, false},
      {"prefix_cache_reuse_pct", "prefix-cache reuse %", 1,
       "hits / queries of the pods' prefix caches, in tokens, over the run",
       [](const ArmResult& a) { return 100.0 * a.summary.prefix_cache_reuse; }},
      {"ttft_p50_ms", "TTFT p50 ms", 0, "time to first token at the client, median",
       [](const ArmResult& a) { return of(a.summary.ttft_ms, &Percentiles::p50); }, true,
       Better::kLower},
      {"ttft_p95_ms", "TTFT p95 ms", 0, "time to first token at the client, 95th percentile",
       [](const ArmResult& a) { return of(a.summary.ttft_ms, &Percentiles::p95); }, true,
       Better::kLower},
      {"ttft_p99_ms", "TTFT p99 ms", 0, "time to first token at the client, 99th percentile",
       [](const ArmResult& a) { return of(a.summary.ttft_ms, &Percentiles::p99); }, false,
       Better::kLower},
      {"ttft_mean_ms", "TTFT mean ms", 0, "time to first token at the client, mean",
       [](const ArmResult& a) { return of(a.summary.ttft_ms, &Percentiles::mean); }, false,
       Better::kLower},
      {"warm_ttft_p50_ms", "warm TTFT p50 ms", 0, "TTFT of turns 2 and later, median",
       [](const ArmResult& a) { return of(a.summary.warm_ttft_ms, &Percentiles::p50); }, true,
       Better::kLower},
      {"warm_ttft_p95_ms", "warm TTFT p95 ms", 0, "TTFT of turns 2 and later, 95th percentile",
       [](const ArmResult& a) { return of(a.summary.warm_ttft_ms, &Percentiles::p95); }, true,
       Better::kLower},
      {"warm_e2e_p50_ms", "warm E2E p50 ms", 0, "end-to-end latency of turns 2 and later, median",
       [](const ArmResult& a) { return of(a.summary.warm_e2e_ms, &Percentiles::p50); }, true,
       Better::kLower},
      {"tpot_p50_ms", "TPOT p50 ms", 1, "time per output token after the first, median",
       [](const ArmResult& a) { return of(a.summary.tpot_ms, &Percentiles::p50); }, true,
       Better::kLower},
      {"tpot_mean_ms", "TPOT mean ms", 1,
       "time per output token after the first, mean over requests (vLLM's benchmark 'Mean "
       "TPOT')",
       [](const ArmResult& a) { return of(a.summary.tpot_ms, &Percentiles::mean); }, false,
       Better::kLower},
      {"max_itl_p95_ms", "max ITL p95 ms", 0,
       "each request's longest gap between streamed tokens, 95th percentile",
       [](const ArmResult& a) { return of(a.summary.max_itl_ms, &Percentiles::p95); }, true,
       Better::kLower},
      {"throughput_req_s", "throughput req/s", 2, "completed requests per second",
       [](const ArmResult& a) { return a.summary.throughput_req_s; }},
      {"output_tokens_per_s", "output tokens/s", 0, "generated tokens per second",
       [](const ArmResult& a) { return a.summary.output_tokens_per_s; }},
      {"errors", "errors", 0, "requests that failed (after any retries)",
       [](const ArmResult& a) { return static_cast<double>(a.summary.failed); }, true,
       Better::kLower},
      {"unfinished", "unfinished", 0,
       "requests the horizon cut before they ended (those waiting to retry included)",
       [](const ArmResult& a) { return static_cast<double>(a.summary.unfinished); }, false,
       Better::kLower},
      {"same_pod_as_previous_turn_pct", "same pod as previous turn %", 1,
       "turns sent to the pod that served the conversation's previous turn",
       [](const ArmResult& a) {
         const RoutingEvidence& e = a.summary.routing;
         return e.later_turns > 0 ? 100.0 * e.same_pod_as_previous_turn
                                  : std::numeric_limits<double>::quiet_NaN();
       },
       true, Better::kNeither},
      {"concentration_peak_mean", "concentration peak/mean", 2,
       "busiest pod's in-flight requests over the mean, averaged over samples",
       [](const ArmResult& a) { return a.summary.routing.concentration_ratio; }, true,
       Better::kLower},
      {"slo_attainment_pct", "SLO attainment %", 1,
       "requests that met their SLO targets (the scenario's slo section), percent of all",
       [](const ArmResult& a) { return 100.0 * goodput_of(a).attainment; }, false},
      {"goodput_req_s", "goodput req/s", 2, "requests per second that met their SLO targets",
       [](const ArmResult& a) { return goodput_of(a).goodput_req_s; }, false},
      {"kv_offload_reuse_pct", "host KV reuse %", 1,
       "prompt tokens loaded from host memory (KV offloading) instead of computed, percent of "
       "prompt tokens (0 without offloading)",
       [](const ArmResult& a) {
         return a.summary.kv_offload ? 100.0 * a.summary.kv_offload->reuse : 0.0;
       },
       false},
      {"combined_reuse_pct", "GPU + host reuse %", 1,
       "prompt tokens not computed (GPU prefix hits and host loads), percent of prompt tokens",
       [](const ArmResult& a) { return 100.0 * combined_reuse(a.summary); }, false},
      {"first_turn_hit_rate_pct", "first-turn hit rate %", 1,
       "mean per-request prefix-cache hit rate of first turns",
       [](const ArmResult& a) { return turn_hit_rate(a, true); }, false},
      {"warm_min_hit_rate_pct", "lowest warm hit rate %", 1,
       "lowest per-request prefix-cache hit rate of turns 2 and later",
       [](const ArmResult& a) { return turn_hit_rate(a, false); }, false},
  };
  return kTable;
}

std::vector<std::string> arm_metric_names() { return entry_names(arm_metrics()); }

const ArmMetric& arm_metric(const std::string& name) {
  return find_entry(arm_metrics(), "metric", name);
}

}  // namespace fleetsim
