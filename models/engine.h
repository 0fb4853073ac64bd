// The engine scheduler of one model server, after vLLM V1: a waiting and a running queue, a
// per-step token budget, chunked prefill, recompute preemption. One call to plan_step() builds
// the batch of one engine step; finish_step() applies its results when the step's time is up.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/cost_model.h"
#include "models/host_kv_tier.h"
#include "models/kv_cache.h"
#include "models/request.h"
#include "models/spec_decode.h"
#include "sim/params.h"
#include "sim/rng.h"
#include "sim/time.h"

namespace fleetsim {

// How vllm:prefix_cache_queries/hits are counted. kPerRequest: once, at a request's first
// lookup (current vLLM). kPerLookup: at every lookup, so a request that waits for blocks is
// counted again each step it waits, and one resumed after preemption again with what of it is
// still cached (vLLM V1 up to 0.10 did this).
enum class PrefixCountingMode { kPerRequest, kPerLookup };

// Where a request's prompt KV comes from when another pod computed it (a prefill pod, vLLM's
// NixlConnector): the network's time per block into this pod, alone on both links, and a fixed
// latency per request. The engine does not time the read: the fleet's network does, sharing
// the links with the other reads (sim/fleet/kv_network.h), and says when it ended
// (Engine::remote_read_done).
struct RemoteKv {
  TimeNs ns_per_block = 0;
  TimeNs latency = 0;
  bool fails = false;  // the read fails when it would have ended (a KV link down)
  // The prefill pod read from (-1: none known) and the fraction of its link (its NICs together)
  // this read keeps busy at full speed (a TP 1 reader of a TP 4 prefill pod: a quarter).
  int source = -1;
  double source_share = 1.0;
};

struct EngineConfig {
  std::int32_t block_size = 16;
  std::int32_t max_num_batched_tokens = 2048;
  std::int32_t max_num_seqs = 256;
  bool enable_chunked_prefill = true;
  bool enable_prefix_caching = true;
  // Admit a waiting request only when blocks for its whole prompt are free (then allocate them
  // all), so a long prefill is never preempted by its own later chunks. vLLM V1 does not: its
  // scheduler allocates the blocks of the chunk it schedules (scheduler.py, allocate_slots).
  bool admit_whole_prompt = false;
  PrefixCountingMode counting = PrefixCountingMode::kPerRequest;
  // A model with sliding-window layers: the blocks they hold beside the full-attention chain.
  SlidingWindowBlocks sliding;
  // vLLM --async-scheduling: the next step is scheduled while this one runs on the GPU.
  bool async_scheduling = false;
  // vLLM --scheduling-policy priority: waiting requests in order of priority, then arrival, and
  // the lowest-priority running request preempted first (else first come, first served).
  bool priority_scheduling = false;
  // vLLM kv_load_failure_policy: a prompt whose KV read from a prefill pod failed is computed
  // here from what the pod already holds (recompute, vLLM's default) or fails (fail).
  bool fail_on_kv_load_error = false;
  // KV offloading to host memory (vLLM --kv-offloading-size): the blocks the host tier holds
  // (0 = off) and the time to load one block into the GPU over the host link.
  std::int64_t offload_blocks = 0;
  TimeNs offload_load_ns_per_block = 0;
  // Speculative decoding (vLLM --speculative-config): draft tokens proposed for each decoding
  // request and verified in its next step (0 = off), and the chance that a draft is accepted
  // given that the drafts before it were.
  SpecMethod spec_method = SpecMethod::kNone;  // kNone when num_speculative_tokens is 0
  std::int32_t num_speculative_tokens = 0;
  double spec_acceptance = 0;
  std::uint64_t spec_seed = 0;  // the engine's own random stream, for the acceptances
};

// The engine's view of one request.
struct Sequence {
  RequestPtr request;
  // The request's figures every step reads, kept here: a step walks every running sequence,
  // and reading them through `request` cost a cache miss each.
  std::int64_t id = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  bool prefill_leg = false;   // request->prefill_leg_for >= 0
  std::int32_t priority = 0;  // request->priority
  std::shared_ptr<const std::vector<BlockHash>> hash_owner;
  std::span<const BlockHash> hashes;  // *hash_owner
  // Sets `request` and the figures kept from it.
  void bind(RequestPtr r);
  // Lower bounds of what the KV cache holds for it (models without sliding-window layers; 0
  // after its blocks are freed): blocks, and leading blocks offered to the prefix cache. Below
  // them the cache's allocate and cache_full_blocks change nothing, and a decode step skips
  // both (their lookups of the request were a tenth of a run).
  std::int32_t kv_blocks = 0;
  std::int32_t kv_registered = 0;
  std::int32_t num_computed = 0;    // tokens whose KV is computed (or scheduled this step)
  std::int32_t num_output = 0;      // tokens generated so far
  std::int32_t cached_tokens = -1;  // prefix-cache hit at first admission; -1 before
  std::int32_t preemptions = 0;
  bool counted = false;  // prefix-cache queries already counted once
  // Tokens of this request in steps that have not ended: a pipeline-parallel pod runs several
  // steps (microbatches) at once. A prompt's next chunk may follow the one under way into the
  // next microbatch, but a request waits for its step's token before it decodes again (vLLM V1's
  // scheduler counts scheduled tokens as computed and skips a request with none left).
  std::int32_t in_flight_tokens = 0;
  bool in_flight() const { return in_flight_tokens > 0; }
  // Aborted while under way: it gets no further step, and leaves once its steps have ended.
  bool cancelled = false;
  TimeNs enqueued = 0;
  std::int32_t loading_blocks = 0;  // blocks being loaded from the host tier
  TimeNs load_done = 0;             // when that load ends
  std::int32_t offered_blocks = 0;  // leading full blocks already offered to the host tier
  // Prefill/decode disaggregation: the prompt's KV is read from a prefill pod over the network
  // at this cost per block (0 = computed here), plus a fixed latency per request.
  TimeNs remote_ns_per_block = 0;
  TimeNs remote_latency = 0;
  bool remote_load_fails = false;
  int remote_source = -1;
  double remote_source_share = 1.0;
  // Tokens the engine must hold: the prompt plus what it generated (recomputed after preemption).
  std::int32_t num_tokens() const { return prompt_tokens + num_output; }
};

struct ScheduledSeq {
  Sequence* seq;
  std::int32_t new_tokens;
  std::int32_t context_tokens;
  std::int32_t drafts = 0;  // speculative tokens verified with this decode (in new_tokens)
  // The sequence's figures when the step was planned (plan_step fills them), for observers of
  // the step's end: by then the other pods' steps have pushed the sequence out of the cache.
  // Its tokens do not change while it is in a step under way.
  std::int64_t id = -1;
  std::int32_t seq_tokens = 0;  // prompt + output so far
  bool prefill_leg = false;
};

struct StepPlan {
  std::vector<ScheduledSeq> scheduled;
  std::vector<BatchEntry> batch;
  std::vector<Sequence*> admitted;  // admitted for the first time in this step
  // Requests whose KV read failed under kv_load_failure_policy fail: out of the engine, their
  // blocks freed, for the pod to answer with an error.
  std::vector<RequestPtr> load_failed;
  // Admitted this step to read their prompt's KV from a prefill pod: the pod starts each read
  // on the network and reports its end (Engine::remote_read_done).
  std::vector<Sequence*> remote_reads;
  std::int32_t num_tokens = 0;
  std::int32_t num_prefill_seqs = 0;
  std::int32_t num_decode_seqs = 0;
  bool empty() const { return scheduled.empty(); }
};

// What a step produced, for the pod to report.
struct StepOutcome {
  std::vector<Sequence*> first_tokens;              // emitted their first token this step
  std::vector<std::shared_ptr<Sequence>> finished;  // generated their last token this step
};

// vLLM's per-pod counters, under the names vLLM exports (without the vllm: prefix).
struct EngineCounters {
  std::int64_t prefix_cache_queries = 0;
  std::int64_t prefix_cache_hits = 0;
  std::int64_t prompt_tokens = 0;      // prompt_tokens_total
  std::int64_t generation_tokens = 0;  // generation_tokens_total
  std::int64_t num_preemptions = 0;    // num_preemptions_total
  std::int64_t request_success = 0;    // request_success_total
  std::int64_t steps = 0;
  // The host tier (KV offloading), as vLLM counts a KV connector's hits: every prompt looked up
  // there (whole, like prefix_cache_queries) and the tokens found there beyond the GPU's hit;
  // and the blocks copied into it.
  std::int64_t external_prefix_cache_queries = 0;
  std::int64_t external_prefix_cache_hits = 0;
  std::int64_t offload_stored_blocks = 0;
  // Speculative decoding, as vLLM exports it (vllm:spec_decode_num_drafts,
  // _num_draft_tokens, _num_accepted_tokens): decodes that verified drafts, drafts verified,
  // drafts accepted.
  std::int64_t spec_num_drafts = 0;
  std::int64_t spec_num_draft_tokens = 0;
  std::int64_t spec_num_accepted_tokens = 0;

  // Field by field: a pod adds the counters of its crashed processes, a run subtracts those at
  // the start of its measurement window.
  EngineCounters& operator+=(const EngineCounters& o);
  EngineCounters& operator-=(const EngineCounters& o);
};

class Engine {
 public:
  Engine(const EngineConfig& config, std::int32_t num_blocks);

  // `remote`: the prompt's KV is read from a prefill pod instead of being computed here.
  void add(RequestPtr request, TimeNs now, RemoteKv remote = {});
  bool has_work() const { return !waiting_.empty() || !running_.empty() || !loading_.empty(); }
  // `now` decides which loads from the host tier have ended. Tokens in a step under way are not
  // scheduled again: a request in one waits for its token, a prompt goes on from its chunk
  // under way (several steps are under way only on a pipeline-parallel pod).
  StepPlan plan_step(TimeNs now = 0);
  StepOutcome finish_step(const StepPlan& plan);
  // Drops every sequence (a crash); returns the requests that were inside.
  std::vector<RequestPtr> abort_all();

  // A prefill leg (Request::prefill_leg_for) that has finished keeps its blocks until the decode
  // pod has read them (vLLM's NixlConnector: delay_free_blocks on the prefill side); release()
  // frees them then, or when the prefill pod's patience ends. Attempts are told apart.
  void release(std::int64_t id, std::int32_t attempt);
  // Blocks finished prefill legs still hold.
  std::int32_t held_blocks() const;

  // Waiting requests, those loading their prefix from host memory included (vLLM keeps them in
  // its waiting queue, as WAITING_FOR_REMOTE_KVS, and counts them in num_requests_waiting).
  std::int32_t num_waiting() const {
    return static_cast<std::int32_t>(waiting_.size() + loading_.size());
  }
  std::int32_t num_running() const { return static_cast<std::int32_t>(running_.size()); }
  // Admitted requests waiting for their prefix to load from the host tier.
  std::int32_t num_loading() const { return static_cast<std::int32_t>(loading_.size()); }
  // When the first of the host-tier loads ends; nullopt when none is under way. A pod with
  // nothing else to run plans its next step then. (Reads from prefill pods end when the network
  // says: remote_read_done.)
  std::optional<TimeNs> next_load_done() const;
  // vLLM's abort (the client went away): the request leaves whichever queue holds it, its
  // blocks freed (cached ones stay cached). Call it between steps only: a step's plan points at
  // its sequences. False when the engine does not hold this attempt.
  bool abort(std::int64_t id, std::int32_t attempt);
  // The read of `request`'s prompt from a prefill pod ended (or failed, for a read that fails)
  // at `now`; false when no such read is under way (the request is gone).
  bool remote_read_done(const Request& request, TimeNs now);
  // Whether this attempt is part of a step under way (abort() must wait for its end: cancel()).
  bool in_flight(std::int64_t id, std::int32_t attempt) const;
  // vLLM's abort of a request in a step under way (a pipeline's microbatch): it is scheduled no
  // more, and abort() removes it once that step has ended. False when the attempt is not under
  // way (abort() it now).
  bool cancel(std::int64_t id, std::int32_t attempt);
  const EngineCounters& counters() const { return counters_; }
  const KvBlockCache& cache() const { return cache_; }
  void set_kv_event_log(std::vector<KvEvent>* log) { cache_.set_event_log(log); }
  const EngineConfig& config() const { return config_; }

 private:
  bool schedule_running(StepPlan& plan, std::int32_t& budget);
  void schedule_waiting(StepPlan& plan, std::int32_t& budget, TimeNs now);
  // Admits `s` (the head of the waiting queue) to load `blocks` blocks from the host tier after
  // its GPU hit of `cached_blocks`; false when the GPU has no room for its prompt.
  bool start_load(Sequence& s, std::int32_t cached_blocks, std::int32_t blocks, TimeNs now,
                  StepPlan& plan);
  // Admits `s` to read the rest of its prompt from a prefill pod; false when the GPU has no
  // room for its prompt.
  bool start_remote_load(Sequence& s, std::int32_t cached_blocks, StepPlan& plan);
  void finish_loads(TimeNs now, StepPlan& plan);
  void offer_to_host(Sequence& s);
  // Drafts of `drafts` tokens the target accepts: each in turn with probability
  // spec_acceptance, up to the first rejection.
  std::int32_t accepted_drafts(std::int32_t drafts);
  void preempt(std::shared_ptr<Sequence> seq);
  void enqueue_by_priority(std::shared_ptr<Sequence> seq);
  std::ptrdiff_t lowest_priority_running() const;
  // cache_.allocate and cache_.cache_full_blocks of a running sequence up to `tokens`, skipped
  // where its kv_blocks and kv_registered show they would change nothing.
  bool hold_blocks(Sequence& s, std::int32_t tokens);
  void register_full_blocks(Sequence& s, std::int32_t tokens);
  // The running sequence of this attempt while a step of it is under way; null otherwise.
  Sequence* under_way(std::int64_t id, std::int32_t attempt) const;
  std::span<const BlockHash> hashes_of(const Sequence& s) const;

  EngineConfig config_;
  KvBlockCache cache_;
  std::unique_ptr<HostKvTier> host_;  // null without KV offloading
  TimeNs link_free_ = 0;              // the host link carries one load at a time
  std::deque<std::shared_ptr<Sequence>> waiting_;
  std::vector<std::shared_ptr<Sequence>> running_;
  std::vector<std::shared_ptr<Sequence>> loading_;
  std::map<std::int64_t, std::int32_t> held_;  // finished prefill legs' ids -> their attempt
  EngineCounters counters_;
  Rng spec_rng_;
};

// Server settings of a pod as a scenario writes them (fleet.server), one spec for YAML and help.
const ParamSpec& server_spec();
// vLLM's defaults depend on the GPU: 8192 tokens / 1024 seqs on H100-class and larger,
// 2048 / 256 below 70 GiB of memory and on A100 (vllm/engine/arg_utils.py, usage-context
// defaults for the OpenAI server).
EngineConfig engine_config_from(const Params& server, double gpu_memory_gib,
                                const std::string& gpu_name);

}  // namespace fleetsim
