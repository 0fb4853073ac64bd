// Per-request records and the summary of one arm, with the names of the result schema.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "policies/policy.h"
#include "sim/fleet/observer.h"

namespace fleetsim {

struct RequestRecord {
  std::int64_t id = 0;
  std::int64_t conversation = -1;
  std::int32_t turn = 0;
  int pod = -1;
  TimeNs arrival = -1;
  TimeNs dispatched = -1;
  TimeNs first_token = -1;
  TimeNs finished = -1;
  // Streaming: the engine time of the latest token, and the longest gap between two successive
  // tokens of this attempt (inter-token latency; the client sees the same gaps, shifted).
  TimeNs last_token = -1;
  TimeNs max_itl = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t cached_tokens = 0;
  std::int32_t output_tokens = 0;
  Outcome outcome = Outcome::kOk;
  bool done = false;
  std::int32_t attempts = 0;
  bool measured = true;
  // Prefill/decode disaggregation: the prefill pod that computed this attempt's prompt (-1: the
  // decode pod computed it, or the fleet does not disaggregate). Here it fills the padding after
  // `measured`: a run keeps one record per request.
  int prefill_pod = -1;
  std::string tier;
  std::string slo_class;
  std::string tenant;
};

// Time per output token after the first, ms, of a request with 2+ output tokens: the one
// formula behind the summaries, the per-pool summaries and the Python request columns.
inline double tpot_ms(const RequestRecord& r) {
  return ns_to_ms(r.finished - r.first_token) / (r.output_tokens - 1);
}

// One request's latencies at the client, ms, NaN where undefined: all of them for a request that
// did not complete, TPOT and max ITL for one of fewer than 2 output tokens. The arithmetic of
// summarize(), so percentiles recomputed from requests.csv or the Python columns equal the
// summary's.
struct RequestLatencies {
  double ttft_ms, e2e_ms, tpot_ms, max_itl_ms;
};
inline RequestLatencies latencies_of(const RequestRecord& r) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  if (!r.done || r.outcome != Outcome::kOk || r.first_token < 0)
    return {kNone, kNone, kNone, kNone};
  const bool streamed = r.output_tokens > 1;
  return {ns_to_ms(r.first_token - r.arrival), ns_to_ms(r.finished - r.arrival),
          streamed ? tpot_ms(r) : kNone, streamed ? ns_to_ms(r.max_itl) : kNone};
}

// Collects one record per request from the observer signals.
class RecordCollector : public FleetObserver {
 public:
  void on_arrival(const Request& r, TimeNs t) override;
  void on_dispatch(const Request& r, int pod, TimeNs t) override;
  void on_prefill_leg(const Request& leg, int pod, TimeNs t) override;
  void on_admitted(const Request& r, int pod, std::int32_t cached, TimeNs t) override;
  void on_first_token(const Request& r, int pod, TimeNs t) override;
  void on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) override;
  // Each step emits a token for every sequence it brings up to its full length.
  void on_step(int pod, const StepPlan& plan, TimeNs start, TimeNs duration) override;

  // The records, their streaming figures (last_token, max_itl) brought up to date.
  const std::vector<RequestRecord>& records() const;
  // The client cancelled every measured request unfinished at `end`: it leaves the figures, as
  // an incomplete request leaves guidellm's.
  void drop_unfinished_at(TimeNs end);
  // A request whose failed attempt was waiting for its retry when the run stopped: it is
  // unfinished, not failed.
  void reopen(std::int64_t id);

 private:
  // A request's streaming figures apart from its record: every step updates them for each
  // sequence it decodes, and 16 bytes a request stay in cache where a whole record does not.
  struct Stream {
    TimeNs last_token = -1;
    TimeNs max_itl = 0;
  };
  RequestRecord& at(std::int64_t id);
  Stream& stream(std::int64_t id);
  mutable std::vector<RequestRecord> records_;  // indexed by request id (ids are dense from 0)
  std::vector<Stream> streams_;                 // indexed like records_
};

struct Percentiles {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0;
  std::int64_t count = 0;
};

// Quantiles by linear interpolation between order statistics (Hyndman & Fan type 7), the
// default of numpy and pandas, so a notebook recomputing them from the records gets the same
// figures.
Percentiles percentiles(std::vector<double> values);
// The same type-7 quantile of values already sorted ascending (not empty), prob in [0, 1].
double quantile_sorted(const std::vector<double>& sorted, double prob);

struct PodSummary {
  std::string pod;
  std::int64_t requests = 0;
  std::int64_t prefix_cache_queries = 0;
  std::int64_t prefix_cache_hits = 0;
  std::int64_t preemptions = 0;
  std::int64_t generation_tokens = 0;
  // KV offloading (vllm:external_prefix_cache_queries/hits): prompts looked up in host memory
  // and the tokens found there beyond the GPU's hit.
  std::int64_t external_prefix_cache_queries = 0;
  std::int64_t external_prefix_cache_hits = 0;
  // Speculative decoding (vllm:spec_decode_num_drafts, _num_draft_tokens, _num_accepted_tokens).
  std::int64_t spec_num_drafts = 0;
  std::int64_t spec_num_draft_tokens = 0;
  std::int64_t spec_num_accepted_tokens = 0;
};

// Speculative decoding over an arm's pods.
struct SpecDecodeSummary {
  std::int64_t num_drafts = 0, num_draft_tokens = 0, num_accepted_tokens = 0;
  // vLLM's "mean acceptance length": tokens a verifying step yields, 1 + accepted / drafts.
  double mean_acceptance_length = 0;
  double draft_acceptance_rate = 0;  // accepted / draft tokens
};

// The host tier of an arm whose pods offload KV blocks to host memory.
struct KvOffloadSummary {
  std::int64_t queries = 0, hits = 0;  // summed over the pods
  double reuse = 0;                    // hits / queries: prompt tokens loaded, not computed
  double combined_reuse = 0;           // (GPU hits + host hits) / queries: not computed at all
};

// Where requests went: the evidence behind a policy's reuse and latency.
struct RoutingEvidence {
  // Peak / mean in-flight requests across pods, sampled while anything is in flight: 1 is an
  // even spread, N (the pod count) is everything on one pod.
  double concentration_ratio = 0;      // mean over samples
  double concentration_ratio_max = 0;  // worst sample
  std::int64_t samples = 0;
  // Turns 2+ that ran on the pod of the conversation's previous turn, a share of later_turns.
  double same_pod_as_previous_turn = 0;
  std::int64_t later_turns = 0;  // measured turns whose previous turn was measured too
  // Conversations (of 2+ turns) that ran every turn on one pod, a share of multi_turn.
  double conversations_on_one_pod = 0;
  std::int64_t multi_turn = 0;  // conversations with 2+ measured turns
};

// Samples the concentration ratio from in-flight counts per pod.
class ConcentrationSampler {
 public:
  void sample(const std::vector<std::int32_t>& inflight);
  void fill(RoutingEvidence& e) const;

 private:
  double sum_ = 0, max_ = 0;
  std::int64_t n_ = 0;
};

// One pool of the fleet (fleet.pools): where its requests went and how they fared. Requests
// count on the pool of the pod that ended them (a failed request that never reached a pod counts
// on none).
struct PoolSummary {
  std::string pool;
  std::string gpu;
  std::string model;
  std::int32_t pods = 0;
  // requests = completed + failed + unfinished (those the horizon cut, retries pending included)
  std::int64_t requests = 0, completed = 0, failed = 0, unfinished = 0;
  double prefix_cache_reuse = 0;  // hits / queries over the pool's pods
  Percentiles ttft_ms, tpot_ms, e2e_ms;
};

// One tenant's requests (Request.tenant), for workloads that give them tenants.
struct TenantSummary {
  std::string tenant;
  // requests = completed + failed + unfinished, measured requests only
  std::int64_t requests = 0, completed = 0, failed = 0, unfinished = 0;
  Percentiles ttft_ms, tpot_ms, e2e_ms;  // of its completed requests
};

// Several gateway replicas: how the spreader divided the requests (attempts) among them.
struct ReplicaSummary {
  std::string assignment;            // empty: one replica
  std::vector<std::int64_t> routed;  // by replica
};

// goodput@SLO (sim/fleet/slo.h), for scenarios with an slo section.
struct SloClassGoodput {
  std::string slo_class;  // "" = requests without a class
  std::int64_t requests = 0;
  std::int64_t good = 0;
  double attainment = 0;  // good / requests
};

// A percentile target of the slo section (p95_ttft_ms: 2000) and what the arm reached.
struct PercentileOutcome {
  std::string key;  // p95_ttft_ms
  double target_ms = 0;
  // +inf when more requests failed than the percentile leaves out; NaN (not met) of no requests
  double value_ms = 0;
  bool met = false;
};

struct GoodputSummary {
  std::int64_t requests = 0;  // measured requests, failed and unfinished ones included
  std::int64_t good = 0;
  double attainment = 0;     // good / requests
  double goodput_req_s = 0;  // good requests per second over the arm's measured span
  // By SLO class, in name order; empty when no measured request has a class.
  std::vector<SloClassGoodput> per_class;
  // The section's percentile targets, in the order of slo_targets_spec(); empty when none.
  std::vector<PercentileOutcome> percentiles;
  bool percentiles_met() const {
    for (const auto& p : percentiles) {
      if (!p.met) return false;
    }
    return true;
  }
};

// An autoscaled arm (sim/fleet/autoscaler.h): one point per HPA sync.
struct AutoscalingPoint {
  double t_s = 0;
  double metric = 0;             // average over ready pods with a sample (NaN: none)
  std::int32_t recommended = 0;  // the calculation's recommendation
  std::int32_t desired = 0;      // after stabilization and rate limits
  std::int32_t ready = 0;        // pods the routers may use
  std::int32_t provisioned = 0;  // pods holding a GPU (starting, ready or draining)
};

// Pods holding a GPU over a run: from a pod's provisioning to its exit.
struct PodTime {
  double pod_seconds = 0;
  // The GPUs those pods held: each holds tensor_parallel_size / pods_per_gpu of them.
  double gpu_seconds = 0;
  double mean_pods = 0;  // pod_seconds over the run
  std::int32_t peak_pods = 0;
  std::int32_t pods_added = 0, pods_removed = 0;
  std::int64_t scale_ups = 0, scale_downs = 0;  // syncs (and KEDA checks) that changed the replicas
};

// One pool's Deployment: its HPA's settings and decisions, or metric "none" for a pool of fixed
// size.
struct PoolScaling {
  std::string pool;
  std::string metric = "none";
  std::string schedule;  // autoscaling.schedule as written; empty = none
  double target = 0;
  std::int32_t min_pods = 0, max_pods = 0;
  PodTime pods;
  std::vector<AutoscalingPoint> timeline;  // one point per sync of its HPA
};

struct AutoscalingSummary {
  PodTime fleet;                   // every pod of the fleet, fixed pools included
  std::vector<PoolScaling> pools;  // in fleet_pools() order
};

struct ArmSummary {
  // Measured requests: requests = completed + failed + unfinished, where unfinished are those
  // the horizon cut (a request waiting to retry a failed attempt among them).
  std::int64_t requests = 0, completed = 0, failed = 0, unfinished = 0;
  double prefix_cache_reuse = 0;  // hits / queries over all pods
  Percentiles ttft_ms, warm_ttft_ms, e2e_ms, warm_e2e_ms, tpot_ms;
  // Per completed request with 2+ output tokens: its longest inter-token gap (the worst stall a
  // streaming reader sees, e.g. behind a prefill chunk batched with its decode).
  Percentiles max_itl_ms;
  double throughput_req_s = 0, output_tokens_per_s = 0;
  double duration_s = 0;
  std::vector<PodSummary> per_pod;
  RoutingEvidence routing;
  std::vector<PolicyCounter> policy_counters;
  std::vector<PolicyCounter> gateway_counters;
  std::vector<PoolSummary> per_pool;              // empty unless the fleet has fleet.pools
  std::vector<TenantSummary> per_tenant;          // by name; empty unless requests have tenants
  ReplicaSummary replicas;                        // empty unless gateway.replicas > 1
  std::optional<GoodputSummary> goodput;          // only for scenarios with an slo section
  std::optional<AutoscalingSummary> autoscaling;  // only for autoscaled arms
  std::optional<KvOffloadSummary> kv_offload;     // only when pods offload KV to host memory
  std::optional<SpecDecodeSummary> spec_decode;   // only when pods decode speculatively
};

// Prompt tokens not computed: the GPU's prefix hits, plus host loads where the arm offloads.
inline double combined_reuse(const ArmSummary& s) {
  return s.kv_offload ? s.kv_offload->combined_reuse : s.prefix_cache_reuse;
}

// `window_s` > 0: rates are taken over that many seconds (a client's fixed window) instead of
// the span from the first measured arrival to the last finish.
ArmSummary summarize(const std::vector<RequestRecord>& records, std::vector<PodSummary> pods,
                     double window_s = 0);
// Fills `pools` (name, gpu, model, pods given) from the records and the per-pod counters;
// `pod_pools` is the pool index of each pod.
// By tenant name, over the measured requests; empty when none of them has a tenant.
std::vector<TenantSummary> summarize_tenants(const std::vector<RequestRecord>& records);

std::vector<PoolSummary> summarize_pools(const std::vector<RequestRecord>& records,
                                         const std::vector<PodSummary>& pods,
                                         const std::vector<std::int32_t>& pod_pools,
                                         std::vector<PoolSummary> pools);

}  // namespace fleetsim
