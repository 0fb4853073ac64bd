// NVIDIA Dynamo's KV router (ai-dynamo/dynamo lib/llm/src/kv_router/scheduler.rs,
// DefaultWorkerSelector::select_worker; sequence.rs for the active-sequence counts), as run
// without KV events (use_kv_events = false: the approximate indexer of kv_router/approx.rs):
//  * overlap[w] = leading prompt blocks the router believes worker w caches. The approximate
//    indexer records a request's blocks for the worker it was routed to, each block expiring
//    router_ttl_secs after it was last routed; when it holds more than router_max_tree_size
//    blocks it is pruned to prune_target_ratio of that, earliest expiry (then deepest block)
//    first. It never hears of the engine's evictions: pods' KV events are not exposed to
//    policies yet (see docs/policies.md), so the event-driven indexer is not modelled.
//  * prefill_tokens[w] = tokens still to prefill of the requests active on w + this request's
//    isl - overlap[w] x block_size; decode_blocks[w] = distinct blocks of the requests active on
//    w + this request's blocks w does not already hold (router_track_active_blocks).
//  * logit[w] = overlap_score_weight x prefill_tokens[w] / block_size + decode_blocks[w];
//    router_temperature 0 picks the minimum (ties uniformly at random), > 0 samples
//    softmax(-logit / ((max - min) x temperature)) as softmax_sample does.
// A request's prefill counts as pending until it finishes: Dynamo clears it at the first
// token (mark_prefill_completed), and policies are not told of first tokens yet, so this
// overstates prefill load; mark_prefill_completed() is public for when the gateway can call it.
// Defaults: KvRouterConfig::default() in lib/llm/src/kv_router/config.rs.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "policies/policy.h"

namespace fleetsim {

class DynamoKvPolicy : public RoutingPolicy {
 public:
  DynamoKvPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }
  void on_dispatched(const Request& request, int pod) override;
  void on_finished(const Request& request, int pod) override;

  // The prefill of request `id` is done: its tokens stop counting as pending prefill.
  void mark_prefill_completed(std::int64_t id);

  struct Cost {
    std::int32_t overlap_blocks = 0;
    double prefill_blocks = 0;  // pending prefill tokens / block size, this request included
    double decode_blocks = 0;   // active distinct blocks, this request's new ones included
    double logit = 0;
  };
  // The cost of sending `request` to `pod` at time `now`.
  Cost cost(const Request& request, int pod, TimeNs now) const;
  // Leading blocks of `hashes` the approximate index holds for `pod`, unexpired at `now`.
  std::int32_t overlap(int pod, std::span<const BlockHash> hashes, TimeNs now) const;
  std::vector<BlockHash> prompt_blocks(const Request& request) const;
  std::int64_t index_size() const { return index_entries_; }
  std::int64_t active_blocks(int pod) const;
  std::int64_t pending_prefill_tokens(int pod) const;

  std::vector<PolicyCounter> counters() const override;

 private:
  struct IndexEntry {
    TimeNs expiry = 0;
    std::int32_t position = 0;  // the block's position in its sequence
  };
  struct WorkerView {
    std::unordered_map<BlockHash, IndexEntry> index;     // approximate cache view
    std::unordered_map<BlockHash, std::int32_t> active;  // distinct active blocks, refcounted
    std::int64_t pending_prefill = 0;                    // tokens
  };
  struct Active {
    int pod = -1;
    std::vector<BlockHash> blocks;
    std::int64_t prefill_tokens = 0;  // still pending (0 once completed)
  };
  WorkerView& state_for(int pod);
  void expire(TimeNs now);
  void prune();
  void release(std::int64_t id);

  double overlap_weight_;
  double temperature_;
  TimeNs ttl_;
  std::int64_t max_tree_size_;
  double prune_ratio_;
  bool track_active_blocks_;
  std::int32_t block_size_;
  std::vector<WorkerView> pods_;
  std::unordered_map<std::int64_t, Active> active_;  // by request id
  std::int64_t index_entries_ = 0;
  TimeNs now_ = 0;  // time of the last pick: dispatch follows it at the same instant
  TimeNs next_expiry_sweep_ = 0;
  Rng rng_;
  std::int64_t isl_blocks_ = 0;      // KVHitRateEvent.isl_blocks summed
  std::int64_t overlap_blocks_ = 0;  // KVHitRateEvent.overlap_blocks summed
};

}  // namespace fleetsim
