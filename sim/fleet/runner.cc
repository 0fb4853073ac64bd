#include "sim/fleet/runner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "models/block_hash.h"
#include "models/cost_model.h"
#include "models/engine.h"
#include "models/gpu_catalog.h"
#include "models/kv_capacity.h"
#include "models/llm_catalog.h"
#include "sim/errors.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/pod.h"
#include "sim/fleet/workload.h"

namespace fleetsim {
namespace {

struct PodBuild {
  PodConfig config;
  std::shared_ptr<const CostModel> cost;
  double kv_gib = 0;
};

PodBuild build_pod(const Scenario& s) {
  const GpuSpec& gpu = find_gpu(s.fleet.gpu);
  const LlmSpec& llm = find_model(s.fleet.model);
  const Params& server = s.fleet.server;
  PodBuild b;
  b.config.engine = engine_config_from(server, gpu.memory_gib, gpu.name);
  const auto tp = static_cast<std::int32_t>(server.get_int("tensor_parallel_size"));
  const auto kv_dtype_bytes = static_cast<std::int32_t>(server.get_int("kv_cache_dtype_bytes"));
  const KvCapacity cap = compute_kv_capacity(
      gpu, llm, server.get_double("gpu_memory_utilization"), tp, kv_dtype_bytes,
      b.config.engine.block_size, b.config.engine.max_num_batched_tokens,
      b.config.engine.max_num_seqs);
  const std::int64_t override_blocks = server.get_int("num_gpu_blocks_override");
  b.config.num_blocks = static_cast<std::int32_t>(override_blocks > 0 ? override_blocks : cap.num_blocks);
  b.kv_gib = static_cast<double>(b.config.num_blocks) * b.config.engine.block_size *
             static_cast<double>(cap.bytes_per_token) / (1024.0 * 1024 * 1024);
  b.config.api_overhead_fixed = ms_to_ns(server.get_double("api_overhead_ms"));
  b.config.api_overhead_ns_per_token = server.get_double("api_overhead_ms_per_1k_tokens") * 1e3;
  b.cost = make_cost_model(s.fleet.cost_model, gpu, llm, tp, kv_dtype_bytes);
  return b;
}

// Contract checks at the end of an arm: nothing leaks, nothing is lost.
void check_end_state(const std::vector<std::unique_ptr<Pod>>& pods, const ArmSummary& sum,
                     bool cut_by_horizon, const std::string& arm) {
  for (const auto& p : pods) {
    p->engine().cache().check_invariants();
    if (!cut_by_horizon && p->engine().cache().num_free_blocks() != p->engine().cache().num_blocks()) {
      throw InternalError("arm " + arm + ": " + p->name() + " leaked KV blocks");
    }
  }
  if (!cut_by_horizon && sum.completed + sum.failed != sum.requests) {
    throw InternalError("arm " + arm + ": " + std::to_string(sum.requests - sum.completed - sum.failed) +
                        " requests never ended");
  }
}

}  // namespace

FleetFacts fleet_facts(const Scenario& s) {
  const PodBuild b = build_pod(s);
  return {b.config.num_blocks, b.kv_gib, b.config.engine.max_num_batched_tokens,
          b.config.engine.max_num_seqs};
}

ArmResult run_arm(const Scenario& s, const ArmSpec& arm) {
  const PodBuild build = build_pod(s);
  EventLoop loop;
  RecordCollector records;
  ObserverList observers;
  observers.add(&records);

  PolicyContext pctx;
  for (int i = 0; i < s.fleet.pods; ++i) pctx.pod_names.push_back("pod-" + std::to_string(i));
  pctx.engine_block_size = build.config.engine.block_size;
  pctx.seed = s.seed;
  pctx.stream_name = "arm/" + arm.name + "/policy";

  std::vector<std::unique_ptr<Pod>> pods;
  for (int i = 0; i < s.fleet.pods; ++i) {
    pods.push_back(std::make_unique<Pod>(i, pctx.pod_names[static_cast<size_t>(i)], loop,
                                         build.config, build.cost, observers));
  }
  GatewayConfig gcfg;
  gcfg.network_latency = ms_to_ns(s.fleet.server.get_double("network_latency_ms"));
  Gateway gateway(loop, pods, make_policy(arm.policy, arm.params, pctx), observers, gcfg);
  for (auto& p : pods) p->set_listener(&gateway);

  std::int64_t next_id = 0;
  WorkloadContext wctx;
  wctx.loop = &loop;
  wctx.seed = s.seed;
  wctx.block_size = build.config.engine.block_size;
  wctx.model = s.fleet.model;
  wctx.submit = [&](Request r) {
    r.id = next_id++;
    r.model = s.fleet.model;
    r.arrival = loop.now();
    compute_block_hashes(r, build.config.engine.block_size);
    gateway.submit(std::make_shared<Request>(std::move(r)));
  };
  const auto& entry = WorkloadRegistry::instance().get(s.workload_type, "workload");
  std::unique_ptr<Workload> workload = entry.factory(s.workload, wctx);
  gateway.on_completion([&](const RequestPtr& r, Outcome o) { workload->on_complete(*r, o); });

  workload->start();
  const TimeNs horizon = s.horizon_s > 0 ? sec_to_ns(s.horizon_s) : INT64_MAX;
  loop.run(horizon);
  const bool cut = loop.pending() > 0;

  std::vector<PodSummary> per_pod;
  for (const auto& p : pods) {
    const EngineCounters& c = p->engine().counters();
    per_pod.push_back({p->name(), 0, c.prefix_cache_queries, c.prefix_cache_hits,
                       c.num_preemptions, c.generation_tokens});
  }
  ArmResult out;
  out.name = arm.name;
  out.policy = arm.policy;
  out.summary = summarize(records.records(), std::move(per_pod));
  out.events = loop.events_run();
  check_end_state(pods, out.summary, cut, arm.name);
  out.records = records.records();
  return out;
}

RunResult run_scenario(const Scenario& s, int threads) {
  RunResult result;
  result.scenario = s.name;
  result.seed = s.seed;
  result.fleet = fleet_facts(s);
  result.arms.resize(s.arms.size());
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int n = threads <= 0 ? std::min(hw, static_cast<int>(s.arms.size())) : threads;
  if (n <= 1 || s.arms.size() <= 1) {
    for (size_t i = 0; i < s.arms.size(); ++i) result.arms[i] = run_arm(s, s.arms[i]);
    return result;
  }
  // Each arm writes only its own slot, so the output does not depend on thread timing.
  std::atomic<size_t> next{0};
  std::vector<std::exception_ptr> errors(s.arms.size());
  std::vector<std::thread> pool;
  for (int t = 0; t < n; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < s.arms.size(); i = next++) {
        try {
          result.arms[i] = run_arm(s, s.arms[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return result;
}

}  // namespace fleetsim
