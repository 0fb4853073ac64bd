#include "sim/fleet/runner.h"

#include <spdlog/spdlog.h>
#include <tsl/robin_set.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include "models/block_hash.h"
#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/kv_capacity.h"
#include "models/llm_catalog.h"
#include "models/mig.h"
#include "models/spec_decode.h"
#include "models/vllm_version.h"
#include "sim/errors.h"
#include "sim/fleet/autoscaler.h"
#include "sim/fleet/failures.h"
#include "sim/fleet/faults.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/hazards.h"
#include "sim/fleet/parallel.h"
#include "sim/fleet/pod.h"
#include "sim/fleet/run_size.h"
#include "sim/fleet/topology.h"
#include "sim/fleet/workload.h"
#include "sim/progress.h"

namespace fleetsim {
namespace {

struct PodBuild {
  PodConfig config;
  std::shared_ptr<const CostModel> cost;
  double kv_gib = 0;
  double weight_gib = 0;  // per GPU, as vLLM loads them
};

// Host efficiency of KV loads: about 50 GB/s one way on an H100's PCIe Gen5 x16 (64 GB/s), from
// the vLLM blog "Inside vLLM's New Offloading Connector" (2026-01-08).
constexpr double kHostLinkEfficiency = 0.78;

// vLLM's CPU offloading buffer is the total over the pod's ranks; each rank holds its share of
// a block's heads, and all ranks load their shares at once over their own links.
void set_kv_offload(EngineConfig& e, const Params& server, const GpuSpec& gpu,
                    std::int64_t bytes_per_token_per_gpu, std::int32_t tp,
                    const std::string& pool) {
  const double gib = server.get_double("kv_offloading_size_gib");
  if (gib <= 0) return;
  if (!e.enable_prefix_caching) {
    throw ScenarioError("pool '" + pool +
                        "': server.kv_offloading_size_gib needs enable_prefix_caching (the host "
                        "tier is found by block hash)");
  }
  const double block_bytes =
      static_cast<double>(e.block_size) * static_cast<double>(bytes_per_token_per_gpu);
  e.offload_blocks = static_cast<std::int64_t>(gib * 1024.0 * 1024 * 1024 / (block_bytes * tp));
  const double set_gbs = server.get_double("kv_offload_bandwidth_gbs");
  const double gbs = set_gbs > 0 ? set_gbs : gpu.host_link_gbs * kHostLinkEfficiency;
  if (gbs <= 0) {
    throw ScenarioError("pool '" + pool + "': KV offloading needs a host link: GPU " + gpu.name +
                        " has no host_link_gbs; set it in fleet.gpus or set "
                        "server.kv_offload_bandwidth_gbs");
  }
  if (e.offload_blocks < 1) {
    throw ScenarioError("pool '" + pool + "': server.kv_offloading_size_gib " +
                        std::to_string(gib) + " holds no KV block of " +
                        std::to_string(block_bytes * tp / 1048576.0) + " MiB; expected more");
  }
  e.offload_load_ns_per_block = static_cast<TimeNs>(block_bytes / (gbs * 1e9) * 1e9);
}

// vLLM's max_model_len: the model's own length unless the server sets another; a longer one
// needs VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (server.allow_long_max_model_len; vllm/config/model.py,
// _get_and_verify_max_len).
std::int32_t max_model_len(const Params& server, const LlmSpec& llm, const std::string& pool) {
  const auto set = static_cast<std::int32_t>(server.get_int("max_model_len"));
  if (set == 0) return llm.max_position_embeddings;
  if (llm.max_position_embeddings > 0 && set > llm.max_position_embeddings &&
      !server.get_bool("allow_long_max_model_len")) {
    throw ScenarioError("pool '" + pool + "': server.max_model_len " + std::to_string(set) +
                        " is longer than " + llm.name + "'s max_position_embeddings (" +
                        std::to_string(llm.max_position_embeddings) +
                        "), which vLLM refuses; expected at most that, 0 for it, or "
                        "server.allow_long_max_model_len: true (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1)");
  }
  return set;
}

// Without chunked prefill a prompt is computed in one step, so vLLM raises the step budget to
// max_model_len unless the server set one, and refuses a set budget below it
// (vllm/config/scheduler.py).
void budget_without_chunking(EngineConfig& e, const Params& server, std::int32_t max_len,
                             const std::string& pool) {
  if (e.enable_chunked_prefill || max_len <= 0) return;
  if (server.get_int("max_num_batched_tokens") == 0) {
    e.max_num_batched_tokens = std::max(e.max_num_batched_tokens, max_len);
  } else if (e.max_num_batched_tokens < max_len) {
    throw ScenarioError("pool '" + pool + "': server.max_num_batched_tokens " +
                        std::to_string(e.max_num_batched_tokens) + " is below max_model_len " +
                        std::to_string(max_len) +
                        " with enable_chunked_prefill off, which vLLM refuses; expected at least "
                        "max_model_len, or a shorter server.max_model_len");
  }
}

// What vLLM or this model does not run with pipeline parallelism.
void check_pipeline(const PoolSpec& pool, std::int32_t pp) {
  if (pp <= 1) return;
  const std::string at =
      "pool '" + pool.name + "': server.pipeline_parallel_size " + std::to_string(pp) + " ";
  if (pool.cost_model.get_string("type") != "roofline") {
    throw ScenarioError(at +
                        "needs cost_model.type roofline, which times one stage's layers; a "
                        "fitted model's coefficients time whole steps");
  }
  if (pool.pods_per_gpu > 1) {
    throw ScenarioError(at +
                        "spans several GPUs, so its pods cannot share one; expected "
                        "pods_per_gpu 1");
  }
  if (pool.server.get_int("num_speculative_tokens") > 0) {
    throw ScenarioError(at +
                        "with speculative decoding is not modelled; expected "
                        "num_speculative_tokens 0");
  }
}

// Stage to stage, NCCL sends each microbatch's hidden states and residual (BF16) from every GPU
// of a stage to its peer in the next: over the GPUs' own link within a node (an NVLink domain,
// or up to eight PCIe GPUs), over the network (server.kv_transfer_gbs a GPU) beyond. Its fixed
// cost is NCCL's small-message floor (kNcclPcieLatencyUs); NVLink pays less and a network more,
// a few tens of microseconds either way against stages of milliseconds.
void set_pipeline_send(PodConfig& c, const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                       const Params& server) {
  constexpr std::int32_t kGpusPerPcieNode = 8;
  const std::int32_t gpus = tp * c.pipeline_parallel_size;
  const bool one_node = gpus <= std::max(gpu.nvlink_gpus, kGpusPerPcieNode);
  c.pipeline_send_bytes_per_token = 2.0 * 2.0 * llm.hidden_size;
  c.pipeline_send_gbs = one_node
                            ? gpu.interconnect_gbs
                            : std::min(gpu.interconnect_gbs, server.get_double("kv_transfer_gbs"));
  c.pipeline_send_latency = saturated_ns(kNcclPcieLatencyUs * 1e3);
}

// The GPU a pod of `pool` sees: the pool's, or under MIG the instance it is given.
GpuSpec pod_gpu(const PoolSpec& pool, const FleetSpec& fleet) {
  const GpuSpec& gpu = find_gpu(fleet.gpus, pool.gpu);
  if (pool.gpu_sharing != GpuSharing::kMig) return gpu;
  const auto profile = mig_profile(gpu, pool.pods_per_gpu);
  if (!profile) {
    throw InternalError("pool '" + pool.name + "': no MIG profile for " +
                        std::to_string(pool.pods_per_gpu) + " instances of " + gpu.name +
                        " passed the scenario's checks");
  }
  return mig_instance(gpu, *profile);
}

PodBuild configure_pod(const PoolSpec& pool, const FleetSpec& fleet) {
  const GpuSpec gpu = pod_gpu(pool, fleet);
  const Params& server = pool.server;
  const auto pp = static_cast<std::int32_t>(server.get_int("pipeline_parallel_size"));
  check_pipeline(pool, pp);
  // Every quantity per GPU below is the busiest pipeline stage's (all of the model at pp 1).
  const LlmSpec llm = pipeline_stage(find_model(fleet.models, pool.model), pp);
  PodBuild b;
  b.config.engine = engine_config_from(server, gpu.memory_gib, gpu.name);
  b.config.engine.block_size = attention_block_size(gpu, llm, b.config.engine.block_size);
  const auto tp = static_cast<std::int32_t>(server.get_int("tensor_parallel_size"));
  const auto kv_dtype_bytes = static_cast<std::int32_t>(server.get_int("kv_cache_dtype_bytes"));
  b.config.max_model_len = max_model_len(server, llm, pool.name);
  budget_without_chunking(b.config.engine, server, b.config.max_model_len, pool.name);
  // Both the memory and the cost model treat it as off below two GPUs.
  const bool expert_parallel = server.get_bool("enable_expert_parallel");
  const KvCapacity cap = compute_kv_capacity(
      gpu, llm, gpu_memory_utilization_of(server), tp, kv_dtype_bytes, b.config.engine.block_size,
      b.config.engine.max_num_batched_tokens, b.config.engine.max_num_seqs,
      estimates_cudagraph_memory(server, llm), expert_parallel);
  check_room_for_max_model_len(cap, gpu, llm, tp, b.config.engine.block_size,
                               b.config.max_model_len, b.config.engine.max_num_batched_tokens);
  b.config.engine.sliding = cap.sliding;
  const std::int64_t override_blocks = server.get_int("num_gpu_blocks_override");
  b.config.num_blocks =
      static_cast<std::int32_t>(override_blocks > 0 ? override_blocks : cap.num_blocks);
  b.weight_gib = cap.weight_bytes / (1024.0 * 1024 * 1024);
  b.kv_gib = static_cast<double>(b.config.num_blocks) * b.config.engine.block_size *
             static_cast<double>(cap.bytes_per_token) / (1024.0 * 1024 * 1024);
  set_kv_offload(b.config.engine, server, gpu, cap.bytes_per_token, tp * pp, pool.name);
  b.config.tensor_parallel_size = tp;
  b.config.pipeline_parallel_size = pp;
  if (pp > 1) set_pipeline_send(b.config, gpu, llm, tp, server);
  // The full-attention layers' KV (a sliding layer's window is a few blocks); a latent
  // (MLA) is whole on every rank, grouped KV heads split across ranks.
  b.config.kv_transfer_bytes.assign(static_cast<size_t>(tp) + 1, 0.0);
  for (std::int32_t t = 1; t <= tp; ++t) {
    b.config.kv_transfer_bytes[static_cast<size_t>(t)] =
        static_cast<double>(llm.kv_bytes_per_token_layer(kv_dtype_bytes, t)) *
        llm.full_attention_layers();
  }
  b.config.kv_transfer_gbs = server.get_double("kv_transfer_gbs");
  b.config.kv_transfer_latency = ms_to_ns(server.get_double("kv_transfer_latency_ms"));
  b.config.kv_transfer_hold = sec_to_ns(server.get_double("kv_transfer_hold_s"));
  b.config.api_overhead_fixed = ms_to_ns(server.get_double("api_overhead_ms"));
  b.config.api_overhead_ns_per_token = server.get_double("api_overhead_ms_per_1k_tokens") * 1e3;
  b.config.api_server_count = static_cast<int>(server.get_int("api_server_count"));
  b.cost = make_cost_model(pool.cost_model, gpu, llm, tp, kv_dtype_bytes, expert_parallel);
  b.config.draft = DraftCost(
      b.config.engine.spec_method, gpu, llm, tp, pool.cost_model.get_double("compute_efficiency"),
      bandwidth_efficiency_for(gpu, pool.cost_model.get_double("bandwidth_efficiency")));
  return b;
}

// What vLLM would refuse is found here, after parsing: the error names the pool's place in the
// file, so a user knows which section to change.
PodBuild build_pod(const PoolSpec& pool, const FleetSpec& fleet) {
  if (pool.where.empty()) return configure_pod(pool, fleet);
  try {
    return configure_pod(pool, fleet);
  } catch (const DeploymentError& e) {
    throw DeploymentError(pool.where, e.reason());
  } catch (const ScenarioError& e) {
    throw ScenarioError(pool.where + ": " + e.what());
  }
}

// vLLM's counters at the start of the measurement window (the first measured arrival), so a
// workload's warm-up does not count in the reuse, as a benchmark reads counter deltas.
class WindowStart : public FleetObserver {
 public:
  explicit WindowStart(const std::vector<std::unique_ptr<Pod>>& pods) : pods_(pods) {}
  void on_arrival(const Request& r, TimeNs) override {
    if (taken_ || !r.measured) return;
    taken_ = true;
    for (const auto& p : pods_) base_.push_back(p->counters());
  }
  EngineCounters base(size_t pod) const { return taken_ ? base_[pod] : EngineCounters{}; }

 private:
  const std::vector<std::unique_ptr<Pod>>& pods_;
  std::vector<EngineCounters> base_;
  bool taken_ = false;
};

// Contract checks at the end of an arm: nothing leaks, nothing is lost.
// `arm_label` ("file: arm 'name'") starts each error.
void check_end_state(const std::vector<std::unique_ptr<Pod>>& pods, const ArmSummary& sum,
                     bool cut_by_horizon, const std::string& arm_label) {
  for (const auto& p : pods) {
    p->engine().cache().check_invariants();
    // A prefill pod may still hold a prompt's KV for a decode pod that died before reading it;
    // vLLM frees it when kv_transfer_hold_s ends, which the run did not wait for.
    if (!cut_by_horizon && p->engine().cache().num_free_blocks() + p->engine().held_blocks() !=
                               p->engine().cache().num_blocks()) {
      throw InternalError(arm_label + ": " + p->name() + " leaked KV blocks");
    }
  }
  if (sum.completed + sum.failed + sum.unfinished != sum.requests) {
    throw InternalError(arm_label + ": " + std::to_string(sum.requests) + " requests but " +
                        std::to_string(sum.completed) + " completed, " +
                        std::to_string(sum.failed) + " failed and " +
                        std::to_string(sum.unfinished) + " unfinished");
  }
  if (!cut_by_horizon && sum.unfinished > 0) {
    throw Error(arm_label + ": " + std::to_string(sum.unfinished) +
                " requests never ended before the run's end (a black-holed pod keeps a request "
                "until gateway.request_timeout_s, forever when it is 0)");
  }
}

}  // namespace

std::int64_t pool_gpus(const PoolFacts& p, std::int32_t pods_per_gpu) {
  const std::int32_t per_pod =
      std::max(1, p.tensor_parallel_size) * std::max(1, p.pipeline_parallel_size);
  const std::int32_t share = std::max(1, pods_per_gpu);
  return (std::int64_t{p.pods} + share - 1) / share * per_pod;
}

FleetFacts fleet_facts(const Scenario& s) {
  FleetFacts f;
  for (const PoolSpec& pool : fleet_pools(s.fleet)) {
    const PodBuild b = build_pod(pool, s.fleet);
    PoolFacts facts;
    facts.name = pool.name;
    facts.pods = pool.pods;
    facts.gpu = pool.gpu;
    facts.model = pool.model;
    facts.kv_blocks_per_pod = b.config.num_blocks;
    facts.kv_gib_per_pod = b.kv_gib;
    facts.weight_gib_per_gpu = b.weight_gib;
    facts.max_num_batched_tokens = b.config.engine.max_num_batched_tokens;
    facts.max_num_seqs = b.config.engine.max_num_seqs;
    facts.role = pool.role;
    facts.tensor_parallel_size = b.config.tensor_parallel_size;
    facts.pipeline_parallel_size = b.config.pipeline_parallel_size;
    const bool roofline = pool.cost_model.get_string("type") == "roofline";
    const AllreducePath path = allreduce_path_named(pool.cost_model.get_string("allreduce_path"));
    facts.allreduce_through_host =
        roofline && facts.tensor_parallel_size > 1 && path == AllreducePath::kHost;
    facts.allreduce_through_nccl =
        roofline &&
        allreduces_through_nccl_over_pcie(pod_gpu(pool, s.fleet), facts.tensor_parallel_size, path);
    facts.expert_parallel = facts.tensor_parallel_size > 1 &&
                            find_model(s.fleet.models, pool.model).is_moe() &&
                            pool.server.get_bool("enable_expert_parallel");
    if (b.config.engine.offload_blocks > 0) {
      facts.host_kv_gib_per_pod = pool.server.get_double("kv_offloading_size_gib");
      facts.host_kv_blocks_per_pod = b.config.engine.offload_blocks;
    }
    if (b.config.engine.block_size != pool.server.get_int("block_size")) {
      facts.forced_block_size = b.config.engine.block_size;
    }
    facts.window_blocks_per_request =
        b.config.engine.sliding.blocks_for(std::numeric_limits<std::int32_t>::max());
    if (b.config.engine.num_speculative_tokens > 0) {
      facts.speculative_method =
          spec_method_names()[static_cast<size_t>(b.config.engine.spec_method)];
      facts.num_speculative_tokens = b.config.engine.num_speculative_tokens;
    }
    f.pools.push_back(std::move(facts));
  }
  const PoolFacts& first = f.pools.front();
  f.kv_blocks_per_pod = first.kv_blocks_per_pod;
  f.kv_gib_per_pod = first.kv_gib_per_pod;
  f.weight_gib_per_gpu = first.weight_gib_per_gpu;
  f.max_num_batched_tokens = first.max_num_batched_tokens;
  f.max_num_seqs = first.max_num_seqs;
  return f;
}

namespace {

// "arm/<arm>" for the first gateway replica, "arm/<arm>/replica-<r>" for the others.
std::string replica_stream(const std::string& arm, int replica) {
  return "arm/" + arm + (replica > 0 ? "/replica-" + std::to_string(replica) : "");
}

}  // namespace

PolicyContext policy_context(const Scenario& s, const std::string& arm, int replica) {
  PolicyContext ctx;
  const std::vector<PoolSpec> pools = fleet_pools(s.fleet);
  for (size_t p = 0; p < pools.size(); ++p) {
    if (!s.fleet.pools.empty()) ctx.pools.push_back(pools[p].name);
    const PodBuild b = build_pod(pools[p], s.fleet);
    if (p == 0) ctx.engine_block_size = b.config.engine.block_size;
    const std::int64_t kv_blocks = b.config.num_blocks;
    for (int i = 0; i < pools[p].pods; ++i) {
      ctx.pod_kv_blocks.push_back(kv_blocks);
      ctx.pod_names.push_back(Topology::pod_name(static_cast<int>(ctx.pod_names.size())));
      if (!s.fleet.pools.empty()) ctx.pod_pools.push_back(static_cast<std::int32_t>(p));
    }
  }
  ctx.seed = s.seed;
  ctx.stream_name = replica_stream(arm, replica) + "/policy";
  return ctx;
}

namespace {

// A client's retry policy: after a failed attempt, maybe send the same request again later.
class RetryPolicy {
 public:
  RetryPolicy(const Params& p, std::uint64_t seed)
      : mode_(p.get_string("retry")),
        max_attempts_(static_cast<std::int32_t>(p.get_int("max_attempts"))),
        delay_(ms_to_ns(p.get_double("retry_delay_ms"))),
        max_delay_(ms_to_ns(p.get_double("max_retry_delay_ms"))),
        jitter_(p.get_double("jitter")),
        rng_(make_rng(seed, "client/retry")) {}

  // The delay before attempt `next` (2, 3, ...), or -1 when the client gives up.
  TimeNs delay_before(std::int32_t next) {
    if (mode_ == "none" || next > max_attempts_) return -1;
    double d = static_cast<double>(delay_);
    if (mode_ == "exponential") {
      d = std::min(static_cast<double>(max_delay_), d * std::pow(2.0, next - 2));
    }
    const double j = std::uniform_real_distribution<double>(-jitter_, jitter_)(rng_);
    return static_cast<TimeNs>(std::max(0.0, d * (1.0 + j)));
  }

 private:
  std::string mode_;
  std::int32_t max_attempts_;
  TimeNs delay_, max_delay_;
  double jitter_;
  Rng rng_;
};

// The fleet an arm builds. With autoscaling: max_pods pods for each pool that scales (those
// above its own count start absent), and which pods those are.
struct BuiltFleet {
  std::optional<Scenario> resized;  // empty: the scenario's own fleet
  struct Scaled {
    std::vector<int> managed;  // the pool's pods, by index
    std::int32_t initial = 0;  // how many of them start Ready
  };
  std::vector<Scaled> scaled;  // one per arm.autoscaling entry
};

BuiltFleet built_fleet(const Scenario& scenario, const ArmSpec& arm) {
  BuiltFleet b;
  if (arm.autoscaling.empty()) return b;
  Scenario& r = b.resized.emplace(scenario);
  std::vector<std::int32_t> counts;
  for (const PoolSpec& p : fleet_pools(r.fleet)) counts.push_back(p.pods);
  std::vector<std::int32_t> initial = counts;
  for (const HpaSpec& h : arm.autoscaling) {
    counts[static_cast<size_t>(h.pool)] = static_cast<std::int32_t>(h.params.get_int("max_pods"));
  }
  if (r.fleet.pools.empty()) {
    r.fleet.pods = counts.front();
  } else {
    r.fleet.pods = 0;
    for (size_t p = 0; p < counts.size(); ++p) {
      r.fleet.pools[p].pods = counts[p];
      r.fleet.pods += counts[p];
    }
  }
  for (const HpaSpec& h : arm.autoscaling) {
    const auto pool = static_cast<size_t>(h.pool);
    BuiltFleet::Scaled& sc = b.scaled.emplace_back();
    const int first = std::accumulate(counts.begin(), counts.begin() + h.pool, 0);
    for (int i = 0; i < counts[pool]; ++i) sc.managed.push_back(first + i);
    sc.initial = initial[pool];
  }
  return b;
}

}  // namespace

ArmResult run_arm(const Scenario& scenario, const ArmSpec& arm) {
  const BuiltFleet built = built_fleet(scenario, arm);
  const Scenario& s = built.resized ? *built.resized : scenario;
  const std::vector<PoolSpec> pool_specs = fleet_pools(s.fleet);
  std::vector<PodBuild> builds;
  std::vector<PoolLayout> layout;
  for (const PoolSpec& pool : pool_specs) {
    builds.push_back(build_pod(pool, s.fleet));
    layout.push_back({pool.pods, pool.pods_per_gpu,
                      static_cast<int>(pool.server.get_int("tensor_parallel_size") *
                                       pool.server.get_int("pipeline_parallel_size"))});
  }
  const std::int32_t block_size = builds.front().config.engine.block_size;
  const GatewayConfig gcfg = gateway_config_from(arm.gateway);
  const Topology topology(layout, s.fleet.gpus_per_node);
  const bool track_failures = !s.faults.empty() || gcfg.probe_interval > 0;
  EventLoop loop;
  RecordCollector records;
  FailureTracker failures(s.fleet.pods, gcfg.shared_health ? 1 : gcfg.replicas);
  ObserverList observers;
  observers.add(&records);
  if (track_failures) observers.add(&failures);

  const PolicyContext pctx = policy_context(s, arm.name);
  const auto fallback_entry = PolicyRegistry::instance().get(gcfg.fallback_policy, "policy");
  std::vector<PodRole> pod_roles;
  for (const PoolSpec& pool : pool_specs) pod_roles.insert(pod_roles.end(), pool.pods, pool.role);
  const bool disaggregates = gcfg.disaggregate && std::find(pod_roles.begin(), pod_roles.end(),
                                                            PodRole::kPrefill) != pod_roles.end();
  std::vector<ReplicaPolicies> replica_policies;
  for (int r = 0; r < gcfg.replicas; ++r) {
    const PolicyContext ctx = r == 0 ? pctx : policy_context(s, arm.name, r);
    PolicyContext fallback_ctx = ctx;
    fallback_ctx.stream_name = replica_stream(arm.name, r) + "/fallback";
    ReplicaPolicies rp;
    const std::string at = arm.params_where.empty() ? "" : arm.params_where + ": ";
    try {
      rp.policy = make_policy(arm.policy, arm.params, ctx);
    } catch (const ScenarioError& e) {
      throw ScenarioError(at + e.what());
    } catch (const UnknownNameError& e) {
      throw ScenarioError(at + e.what());
    }
    rp.fallback = fallback_entry.factory(fallback_entry.spec.defaults(), fallback_ctx);
    if (disaggregates) {
      PolicyContext prefill_ctx = ctx;
      prefill_ctx.stream_name = replica_stream(arm.name, r) + "/prefill";
      if (gcfg.prefill_policy.empty()) {
        rp.prefill = make_policy(arm.policy, arm.params, prefill_ctx);
      } else {
        const auto entry = PolicyRegistry::instance().get(gcfg.prefill_policy, "policy");
        rp.prefill = entry.factory(entry.spec.defaults(), prefill_ctx);
      }
    }
    replica_policies.push_back(std::move(rp));
  }

  std::vector<std::unique_ptr<Pod>> pods;
  std::vector<std::int32_t> pod_pools;
  std::vector<std::shared_ptr<GpuShare>> gpus(static_cast<size_t>(topology.num_gpus()));
  for (size_t p = 0; p < pool_specs.size(); ++p) {
    const PodBuild& build = builds[p];
    for (int k = 0; k < pool_specs[p].pods; ++k) {
      const int i = static_cast<int>(pods.size());
      const std::string& name = pctx.pod_names[static_cast<size_t>(i)];
      PodConfig config = build.config;
      // Each pod's draft acceptances are a stream of their own, the same in every arm.
      config.engine.spec_seed = stream_seed(s.seed, "pod/" + name + "/spec");
      pods.push_back(std::make_unique<Pod>(i, name, loop, config, build.cost, observers));
      pod_pools.push_back(static_cast<std::int32_t>(p));
      const PoolSpec& pool = pool_specs[p];
      const double sm_fraction =
          (pool.mps_active_thread_percentage > 0 ? pool.mps_active_thread_percentage
                                                 : 100 / pool.pods_per_gpu) /
          100.0;
      // A pod alone on its GPU shares it only with an SM cap of its own; MIG instances share
      // nothing.
      const bool shared =
          pool.gpu_sharing != GpuSharing::kMig &&
          (pool.pods_per_gpu > 1 || (pool.gpu_sharing == GpuSharing::kMps && sm_fraction < 1.0));
      if (shared) {
        auto& share = gpus[static_cast<size_t>(topology.gpu_of_pod(i))];
        if (!share) share = std::make_shared<GpuShare>(loop, pool.gpu_sharing, sm_fraction);
        pods.back()->set_gpu_share(share);
      }
    }
  }
  Gateway gateway(loop, pods, std::move(replica_policies), observers, gcfg, s.seed);
  gateway.set_pod_pools(pod_pools);
  gateway.set_pod_roles(pod_roles);
  KvNetwork kv_network(loop);
  for (auto& p : pods) {
    p->set_listener(&gateway);
    p->set_kv_network(&kv_network);
  }
  WindowStart window(pods);
  observers.add(&window);
  std::optional<TimelineRecorder> timeline;
  if (s.timeline.enabled) observers.add(&timeline.emplace(s.timeline, pods));
  // Simulated time past its limit is a figure of the scenario far too large: name the file and
  // the arm, as the events that reach it know neither.
  const auto simulate = [&](const std::function<void()>& step) {
    try {
      step();
    } catch (const TimeLimitError& e) {
      throw ScenarioError(s.file + ": arm '" + arm.name + "': " + e.what());
    }
  };
  simulate([&] { schedule_faults(s.faults, loop, pods, gateway, topology, failures); });
  // Each pool's HPA (its index in arm.autoscaling, -1: none). Every pod of a pool without one
  // holds its GPU throughout; the autoscalers step the rest.
  std::vector<int> hpa_of_pool(pool_specs.size(), -1);
  for (size_t k = 0; k < arm.autoscaling.size(); ++k) {
    hpa_of_pool[static_cast<size_t>(arm.autoscaling[k].pool)] = static_cast<int>(k);
  }
  std::int32_t fixed_pods = 0;
  for (size_t p = 0; p < pool_specs.size(); ++p) {
    if (hpa_of_pool[p] < 0) fixed_pods += pool_specs[p].pods;
  }
  PodClock fleet_clock(fixed_pods);
  std::vector<std::unique_ptr<Autoscaler>> autoscalers;
  for (size_t k = 0; k < arm.autoscaling.size(); ++k) {
    AutoscalerConfig config = autoscaler_config_from(arm.autoscaling[k].params);
    config.prefill_pool =
        disaggregates &&
        pool_specs[static_cast<size_t>(arm.autoscaling[k].pool)].role == PodRole::kPrefill;
    autoscalers.push_back(std::make_unique<Autoscaler>(config, loop, pods, gateway,
                                                       built.scaled[k].managed,
                                                       built.scaled[k].initial, fleet_clock));
    observers.add(autoscalers.back().get());
  }

  std::int64_t next_id = 0;
  WorkloadContext wctx;
  wctx.loop = &loop;
  wctx.seed = s.seed;
  wctx.block_size = block_size;
  wctx.model = s.fleet.model;
  RequestHasher hasher(block_size);
  wctx.submit = [&](Request r) {
    r.id = next_id++;
    r.model = s.fleet.model;
    r.arrival = loop.now();
    r.priority = s.slo.priority_of(r.slo_class);
    hasher.hash(r);
    gateway.submit(std::make_shared<Request>(std::move(r)));
  };
  const auto entry = WorkloadRegistry::instance().get(s.workload_type, "workload");
  std::unique_ptr<Workload> workload;
  try {
    workload = entry.factory(s.workload, wctx);
  } catch (const ScenarioError& e) {
    throw ScenarioError(located_workload_error(s, e.what()));
  }
  const std::optional<double> expected = workload->expected_requests(s.horizon_s);
  // Every arm is as large: the first says so once.
  if (arm.name == s.arms.front().name) check_run_size(s, expected);
  std::int64_t ended = 0;
  RetryPolicy retry(s.client, s.seed);
  std::int64_t lost = 0, retries = 0;
  // Requests between a failed attempt and its retry: unfinished, not failed, if the run stops.
  tsl::robin_set<std::int64_t> awaiting_retry;
  gateway.on_completion([&](const RequestPtr& r, int, Outcome o) {
    if (o != Outcome::kOk) {
      // A request the server refused as too long fails the same way every time.
      const TimeNs delay =
          o == Outcome::kBadRequest400 ? TimeNs{-1} : retry.delay_before(r->attempt + 1);
      if (delay >= 0) {
        // The same request again: same id, content and hashes; a new attempt.
        auto again = std::make_shared<Request>(*r);
        ++again->attempt;
        ++retries;
        awaiting_retry.insert(again->id);
        loop.schedule_in(delay, [&gateway, &awaiting_retry, again] {
          awaiting_retry.erase(again->id);
          gateway.submit(again);
        });
        return;
      }
      ++lost;
    }
    ++ended;
    workload->on_complete(*r, o);
  });

  ConcentrationSampler concentration;
  const TimeNs sample_every = kNsPerSec;
  std::function<void()> sample = [&] {
    std::vector<std::int32_t> inflight;
    for (int i = 0; i < s.fleet.pods; ++i) {
      // An autoscaled fleet's spread is over the pods in service.
      if (autoscalers.empty() || gateway.in_endpoints(i)) inflight.push_back(gateway.inflight(i));
    }
    concentration.sample(inflight);
    report_simulated_fraction(run_fraction(loop.now(), s.horizon_s, ended, expected));
    loop.schedule_background_in(sample_every, sample);
  };
  loop.schedule_background_in(sample_every, sample);

  const TimeNs horizon = s.horizon_s > 0 ? sec_to_ns(s.horizon_s) : INT64_MAX;
  simulate([&] {
    for (auto& a : autoscalers) a->start();
    gateway.start();
    workload->start();
    loop.run(horizon);
  });
  const bool cut = loop.pending_foreground() > 0;
  for (const FaultSpec& f : s.faults) {
    if (sec_to_ns(f.params.get_double("at_s")) > loop.now()) {
      spdlog::warn("{}: arm '{}' ended at {:.3f} s, before this fault, which did not happen",
                   f.at_where, arm.name, ns_to_sec(loop.now()));
    }
  }
  for (const std::int64_t id : awaiting_retry) records.reopen(id);

  std::vector<PodSummary> per_pod;
  for (const auto& p : pods) {
    EngineCounters c = p->counters();
    c -= window.base(static_cast<size_t>(p->index()));
    per_pod.push_back({p->name(), 0, c.prefix_cache_queries, c.prefix_cache_hits, c.num_preemptions,
                       c.generation_tokens, c.external_prefix_cache_queries,
                       c.external_prefix_cache_hits, c.spec_num_drafts, c.spec_num_draft_tokens,
                       c.spec_num_accepted_tokens});
  }
  ArmResult out;
  out.name = arm.name;
  out.policy = arm.policy;
  double window_s = 0;
  if (const auto w = workload->cancel_window()) {
    records.drop_unfinished_at(w->end);
    window_s = ns_to_sec(w->end - w->start);
  }
  out.summary = summarize(records.records(), std::move(per_pod), window_s);
  out.summary.per_tenant = summarize_tenants(records.records());
  if (!s.fleet.pools.empty()) {
    std::vector<PoolSummary> info;
    // The pods each pool starts with (an autoscaled pool's count moves; its figures say how).
    for (const auto& p : fleet_pools(scenario.fleet)) {
      PoolSummary ps;
      ps.pool = p.name;
      ps.gpu = p.gpu;
      ps.model = p.model;
      ps.pods = p.pods;
      info.push_back(std::move(ps));
    }
    out.summary.per_pool =
        summarize_pools(records.records(), out.summary.per_pod, pod_pools, std::move(info));
  }
  if (s.slo.enabled) {
    out.summary.goodput = summarize_goodput(records.records(), s.slo, out.summary.duration_s);
  }
  if (std::any_of(s.arms.begin(), s.arms.end(),
                  [](const ArmSpec& a) { return !a.autoscaling.empty(); })) {
    // Every arm of a scenario where one autoscales, its static ones too: GPU time in the same
    // terms, pool by pool.
    AutoscalingSummary& as = out.summary.autoscaling.emplace();
    const std::vector<std::string> names = pool_names(s.fleet);
    for (size_t p = 0; p < names.size(); ++p) {
      const int k = hpa_of_pool[p];
      as.pools.push_back(k < 0
                             ? fixed_pool_scaling(names[p], pool_specs[p].pods, loop.now())
                             : autoscalers[static_cast<size_t>(k)]->summary(names[p], loop.now()));
    }
    as.fleet = fleet_clock.at_end(loop.now());
    for (size_t p = 0; p < as.pools.size(); ++p) {
      PodTime& t = as.pools[p].pods;
      t.gpu_seconds = t.pod_seconds *
                      static_cast<double>(pool_specs[p].server.get_int("tensor_parallel_size") *
                                          pool_specs[p].server.get_int("pipeline_parallel_size")) /
                      pool_specs[p].pods_per_gpu;
      as.fleet.gpu_seconds += t.gpu_seconds;
    }
    for (const PoolScaling& p : as.pools) {
      as.fleet.pods_added += p.pods.pods_added;
      as.fleet.pods_removed += p.pods.pods_removed;
      as.fleet.scale_ups += p.pods.scale_ups;
      as.fleet.scale_downs += p.pods.scale_downs;
    }
  }
  concentration.fill(out.summary.routing);
  out.summary.policy_counters = gateway.policy_counters();
  out.summary.gateway_counters = gateway.counters();
  if (gateway.num_replicas() > 1) {
    out.summary.replicas.assignment = replica_assignment_name(gcfg.replica_assignment);
    out.summary.replicas.routed = gateway.routed_per_replica();
  }
  out.events = loop.events_run();
  check_end_state(pods, out.summary, cut, s.file + ": arm '" + arm.name + "'");
  if (track_failures) {
    out.failures = failures.to_json(lost, retries, loop.now());
    out.warnings = failures.fail_fast_warnings(loop.now());
  }
  if (auto w = content_hazard(gateway.policy(), out.summary)) out.warnings.push_back(*w);
  for (const std::string& w : out.warnings) spdlog::warn("arm '{}': {}", arm.name, w);
  if (timeline) {
    out.timeline = std::make_shared<const Timeline>(
        timeline->finish(loop.now(), track_failures ? &failures : nullptr));
    if (out.timeline->stopped_at >= 0) {
      spdlog::warn(
          "arm '{}': the timeline stopped recording at {:.3f} s, after {} events "
          "(--timeline-window keeps a part of the run, --timeline-max-events raises the "
          "limit)",
          arm.name, ns_to_sec(out.timeline->stopped_at), out.timeline->events);
    }
  }
  out.records = records.records();
  return out;
}

RunResult run_scenario(const Scenario& s, int threads) {
  RunResult result;
  result.scenario = s.name;
  result.seed = s.seed;
  result.fleet = fleet_facts(s);
  result.arms.resize(s.arms.size());
  // Each arm writes only its own slot, so the output does not depend on thread timing.
  rethrow_first(for_each_index(s.arms.size(), threads,
                               [&](size_t i) { result.arms[i] = run_arm(s, s.arms[i]); }));
  return result;
}

}  // namespace fleetsim
