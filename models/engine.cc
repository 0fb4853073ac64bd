#include "models/engine.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <tuple>
#include <utility>

#include "models/spec_decode.h"
#include "models/vllm_version.h"
#include "sim/errors.h"

namespace fleetsim {

Engine::Engine(const EngineConfig& config, std::int32_t num_blocks)
    : config_(config),
      cache_(num_blocks, config.block_size, config.enable_prefix_caching, config.sliding),
      spec_rng_(config.spec_seed) {
  if (config.max_num_batched_tokens <= 0 || config.max_num_seqs <= 0) {
    throw ScenarioError("max_num_batched_tokens and max_num_seqs must be positive");
  }
  if (config.offload_blocks > 0 && config.enable_prefix_caching) {
    host_ = std::make_unique<HostKvTier>(config.offload_blocks);
  }
}

namespace {

// Applies `f` to each counter of `a` with its twin in `b`: the one list of the fields.
template <typename F>
void each_counter(EngineCounters& a, const EngineCounters& b, F f) {
  f(a.prefix_cache_queries, b.prefix_cache_queries);
  f(a.prefix_cache_hits, b.prefix_cache_hits);
  f(a.prompt_tokens, b.prompt_tokens);
  f(a.generation_tokens, b.generation_tokens);
  f(a.num_preemptions, b.num_preemptions);
  f(a.request_success, b.request_success);
  f(a.steps, b.steps);
  f(a.external_prefix_cache_queries, b.external_prefix_cache_queries);
  f(a.external_prefix_cache_hits, b.external_prefix_cache_hits);
  f(a.offload_stored_blocks, b.offload_stored_blocks);
  f(a.spec_num_drafts, b.spec_num_drafts);
  f(a.spec_num_draft_tokens, b.spec_num_draft_tokens);
  f(a.spec_num_accepted_tokens, b.spec_num_accepted_tokens);
}

}  // namespace

EngineCounters& EngineCounters::operator+=(const EngineCounters& o) {
  each_counter(*this, o, [](std::int64_t& x, std::int64_t y) { x += y; });
  return *this;
}

EngineCounters& EngineCounters::operator-=(const EngineCounters& o) {
  each_counter(*this, o, [](std::int64_t& x, std::int64_t y) { x -= y; });
  return *this;
}

std::int32_t Engine::accepted_drafts(std::int32_t drafts) {
  ++counters_.spec_num_drafts;
  counters_.spec_num_draft_tokens += drafts;
  std::int32_t accepted = 0;
  std::bernoulli_distribution accept(config_.spec_acceptance);
  while (accepted < drafts && accept(spec_rng_)) ++accepted;
  counters_.spec_num_accepted_tokens += accepted;
  return accepted;
}

// A read from a prefill pod whose end the network has not reported yet.
constexpr TimeNs kReadUnderWay = kTimeLimit;

std::optional<TimeNs> Engine::next_load_done() const {
  std::optional<TimeNs> first;
  for (const auto& s : loading_) {
    if (s->load_done == kReadUnderWay) continue;
    if (!first || s->load_done < *first) first = s->load_done;
  }
  return first;
}

bool Engine::remote_read_done(const Request& request, TimeNs now) {
  for (const auto& s : loading_) {
    if (s->request.get() == &request && s->load_done == kReadUnderWay) {
      s->load_done = now;
      return true;
    }
  }
  return false;
}

bool Engine::start_load(Sequence& s, std::int32_t cached_blocks, std::int32_t blocks, TimeNs now,
                        StepPlan& plan) {
  // The loaded blocks need GPU blocks like computed ones: the whole prompt is allocated now (a
  // sliding-window layer's for the window the load ends with).
  if (!cache_.allocate(s.request->id, hashes_of(s), cached_blocks, s.num_tokens(),
                       (cached_blocks + blocks) * config_.block_size)) {
    return false;
  }
  if (s.cached_tokens < 0) {
    s.cached_tokens = cached_blocks * config_.block_size;
    plan.admitted.push_back(&s);
  }
  s.num_computed = cached_blocks * config_.block_size;
  s.loading_blocks = blocks;
  s.load_done = std::max(now, link_free_) + blocks * config_.offload_load_ns_per_block;
  link_free_ = s.load_done;
  loading_.push_back(std::move(waiting_.front()));
  waiting_.pop_front();
  return true;
}

// vLLM's NixlConnector reads every prompt token past the local hit, the partial last block
// too (get_num_new_matched_tokens); the last token is computed here to sample from.
bool Engine::start_remote_load(Sequence& s, std::int32_t cached_blocks, StepPlan& plan) {
  const std::int32_t prompt_blocks = (s.num_tokens() + config_.block_size - 1) / config_.block_size;
  const std::int32_t blocks = prompt_blocks - cached_blocks;
  if (!cache_.allocate(s.request->id, hashes_of(s), cached_blocks, s.num_tokens(),
                       s.num_tokens() - 1)) {
    return false;
  }
  s.cached_tokens = cached_blocks * config_.block_size;
  plan.admitted.push_back(&s);
  s.num_computed = s.cached_tokens;
  s.loading_blocks = blocks;
  s.load_done = kReadUnderWay;
  plan.remote_reads.push_back(&s);
  loading_.push_back(std::move(waiting_.front()));
  waiting_.pop_front();
  return true;
}

// Loaded prefixes join the running requests (and the GPU's prefix cache), oldest first, as far as
// max_num_seqs allows; their prefill continues from the end of the load.
void Engine::finish_loads(TimeNs now, StepPlan& plan) {
  for (auto it = loading_.begin(); it != loading_.end();) {
    Sequence& s = **it;
    if (s.load_done <= now && s.remote_load_fails && config_.fail_on_kv_load_error) {
      cache_.free(s.request->id);
      plan.load_failed.push_back(s.request);
      it = loading_.erase(it);
      continue;
    }
    if (s.load_done > now || static_cast<std::int32_t>(running_.size()) >= config_.max_num_seqs) {
      ++it;
      continue;
    }
    if (s.remote_load_fails) {
      // vLLM marks the blocks the read did not fill invalid and reschedules the request to
      // compute them (scheduler.py, _handle_invalid_blocks): a prefill from its local hit on.
      s.loading_blocks = 0;
      running_.push_back(std::move(*it));
      it = loading_.erase(it);
      continue;
    }
    // A prompt loaded whole still computes its last token, to sample from.
    s.num_computed =
        std::min(s.num_computed + s.loading_blocks * config_.block_size, s.num_tokens() - 1);
    s.loading_blocks = 0;
    cache_.cache_full_blocks(s.request->id, hashes_of(s), s.num_computed);
    running_.push_back(std::move(*it));
    it = loading_.erase(it);
  }
}

// vLLM's offloading connector copies every block computed since the last step to host memory
// (the tier keeps one copy of a hash; offering it again only refreshes it).
void Engine::offer_to_host(Sequence& s) {
  const std::span<const BlockHash> hashes = hashes_of(s);
  const auto full =
      std::min(static_cast<std::int32_t>(hashes.size()), s.num_computed / config_.block_size);
  for (std::int32_t b = s.offered_blocks; b < full; ++b) {
    if (host_->store(hashes[static_cast<size_t>(b)])) ++counters_.offload_stored_blocks;
  }
  s.offered_blocks = std::max(s.offered_blocks, full);
}

void Sequence::bind(RequestPtr r) {
  id = r->id;
  prompt_tokens = r->prompt_tokens;
  output_tokens = r->output_tokens;
  prefill_leg = r->prefill_leg_for >= 0;
  priority = r->priority;
  hash_owner = r->block_hashes;
  hashes = hash_owner ? std::span<const BlockHash>(*hash_owner) : std::span<const BlockHash>();
  request = std::move(r);
}

void Engine::add(RequestPtr request, TimeNs now, RemoteKv remote) {
  if (!request->block_hashes || request->hash_block_size != config_.block_size) {
    throw InternalError("request " + std::to_string(request->id) +
                        " has no block hashes at the engine's block size");
  }
  // A retry's leg under the id of an earlier attempt's, still held: the earlier one is let go.
  if (auto held = held_.find(request->id); held != held_.end()) release(held->first, held->second);
  auto seq = std::make_shared<Sequence>();
  seq->bind(std::move(request));
  seq->enqueued = now;
  seq->remote_ns_per_block = remote.ns_per_block;
  seq->remote_latency = remote.latency;
  seq->remote_load_fails = remote.fails;
  seq->remote_source = remote.source;
  seq->remote_source_share = remote.source_share;
  if (config_.priority_scheduling) {
    enqueue_by_priority(std::move(seq));
  } else {
    waiting_.push_back(std::move(seq));
  }
}

// vLLM's PriorityRequestQueue (v1/core/sched/request_queue.py): a heap by (priority,
// arrival_time), lowest first; here the waiting queue kept in that order (higher Request
// priority first, then earlier arrival, then lower id), a preempted request returning to its
// place rather than the head.
void Engine::enqueue_by_priority(std::shared_ptr<Sequence> seq) {
  const auto after = [&seq](const std::shared_ptr<Sequence>& w) {
    return std::tuple(-seq->priority, seq->enqueued, seq->id) <
           std::tuple(-w->priority, w->enqueued, w->id);
  };
  waiting_.insert(std::find_if(waiting_.begin(), waiting_.end(), after), std::move(seq));
}

std::span<const BlockHash> Engine::hashes_of(const Sequence& s) const {
  const auto full = static_cast<std::size_t>(s.num_tokens() / config_.block_size);
  return s.hashes.first(std::min(s.hashes.size(), full));
}

bool Engine::hold_blocks(Sequence& s, std::int32_t tokens) {
  if (config_.sliding.groups > 0) return cache_.allocate(s.id, hashes_of(s), 0, tokens);
  const std::int32_t blocks = (tokens + config_.block_size - 1) / config_.block_size;
  if (blocks <= s.kv_blocks) return true;
  if (!cache_.allocate(s.id, hashes_of(s), 0, tokens)) return false;
  s.kv_blocks = blocks;
  return true;
}

void Engine::register_full_blocks(Sequence& s, std::int32_t tokens) {
  const std::span<const BlockHash> hashes = hashes_of(s);
  if (config_.sliding.groups > 0) {
    cache_.cache_full_blocks(s.id, hashes, tokens);
    return;
  }
  if (tokens / config_.block_size <= s.kv_registered) return;
  cache_.cache_full_blocks(s.id, hashes, tokens);
  // At least what the cache registered: the full blocks it holds and has hashes for.
  const std::int32_t full = std::min(
      {tokens / config_.block_size, s.kv_blocks, static_cast<std::int32_t>(hashes.size())});
  s.kv_registered = std::max(s.kv_registered, full);
}

void Engine::preempt(std::shared_ptr<Sequence> seq) {
  seq->kv_blocks = 0;
  seq->kv_registered = 0;
  cache_.free(seq->request->id);
  seq->num_computed = 0;
  ++seq->preemptions;
  ++counters_.num_preemptions;
  if (config_.priority_scheduling) {
    enqueue_by_priority(std::move(seq));
  } else {
    waiting_.push_front(std::move(seq));
  }
}

// vLLM's scheduler (v1/core/sched/scheduler.py, schedule) under the priority policy preempts
// max(running, key=(priority, arrival_time)): the lowest priority, the latest arrival among
// equals, wherever it is in the running list, one scheduled earlier in this step too. Requests
// in a step under way cannot be preempted. -1: none can.
std::ptrdiff_t Engine::lowest_priority_running() const {
  std::ptrdiff_t victim = -1;
  for (std::size_t k = 0; k < running_.size(); ++k) {
    const Sequence& r = *running_[k];
    if (r.in_flight()) continue;
    if (victim < 0 || std::pair(-r.priority, r.enqueued) >=
                          std::pair(-running_[static_cast<std::size_t>(victim)]->priority,
                                    running_[static_cast<std::size_t>(victim)]->enqueued)) {
      victim = static_cast<std::ptrdiff_t>(k);
    }
  }
  return victim;
}

// Running requests first, in order: each gets its next chunk or its one decode token. When
// blocks run out, the newest running request is preempted (recompute), as vLLM V1 does, or
// under priority scheduling the lowest-priority one.
bool Engine::schedule_running(StepPlan& plan, std::int32_t& budget) {
  bool preempted = false;
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    Sequence& s = *running_[i];
    if (s.cancelled) {
      ++i;
      continue;
    }
    // Computed, or under way in an earlier microbatch of a pipeline.
    const std::int32_t ahead = s.num_computed + s.in_flight_tokens;
    const std::int32_t remaining = s.num_tokens() - ahead;
    // A decode verifies the drafts proposed for it (never more than its answer has left), and
    // they take their share of the token budget, as vLLM's num_tokens_with_spec does.
    const std::int32_t drafts = remaining == 1 && !s.in_flight()
                                    ? std::clamp(std::min(config_.num_speculative_tokens,
                                                          s.output_tokens - s.num_output - 1),
                                                 0, std::max(budget - 1, 0))
                                    : 0;
    const std::int32_t n = std::min(remaining + drafts, budget);
    if (n <= 0) {
      ++i;
      continue;
    }
    bool self_preempted = false;
    bool no_room = false;
    while (config_.priority_scheduling && !hold_blocks(s, ahead + n)) {
      const std::ptrdiff_t v = lowest_priority_running();
      if (v < 0) {
        no_room = true;
        break;
      }
      preempted = true;
      std::shared_ptr<Sequence> victim = std::move(running_[static_cast<std::size_t>(v)]);
      running_.erase(running_.begin() + v);
      if (victim.get() == &s) {
        preempt(std::move(victim));
        self_preempted = true;
        break;
      }
      if (static_cast<std::size_t>(v) < i) {
        // Before `s` in the list (scheduled earlier in this step, unless it was cancelled or had
        // nothing to compute): its tokens go back to the budget.
        const auto e = std::find_if(plan.scheduled.begin(), plan.scheduled.end(),
                                    [&](const ScheduledSeq& q) { return q.seq == victim.get(); });
        if (e != plan.scheduled.end()) {
          budget += e->new_tokens;
          plan.scheduled.erase(e);
        }
        --i;
      }
      preempt(std::move(victim));
    }
    while (!config_.priority_scheduling && !hold_blocks(s, ahead + n)) {
      // The newest request from `s` on (those before it may be in this step already) that is not
      // in a step under way, `s` itself at the latest; when none is, `s` waits for those steps.
      const auto from_s = running_.rend() - static_cast<std::ptrdiff_t>(i);
      auto last =
          std::find_if(running_.rbegin(), from_s, [](const auto& r) { return !r->in_flight(); });
      if (last == from_s) {
        no_room = true;
        break;
      }
      preempted = true;
      std::shared_ptr<Sequence> victim = std::move(*last);
      running_.erase(std::next(last).base());
      const bool is_self = victim.get() == &s;
      preempt(std::move(victim));
      if (is_self) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted || no_room) break;
    register_full_blocks(s, ahead + n);
    plan.scheduled.push_back({&s, n, ahead, drafts});
    budget -= n;
    ++i;
  }
  return preempted;
}

void Engine::schedule_waiting(StepPlan& plan, std::int32_t& budget, TimeNs now) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<std::int32_t>(running_.size()) < config_.max_num_seqs) {
    Sequence& s = *waiting_.front();
    const std::span<const BlockHash> hashes = hashes_of(s);
    const std::int32_t cached_blocks = cache_.lookup(hashes, s.num_tokens());
    const std::int32_t cached = cached_blocks * config_.block_size;
    // Current vLLM counts a request once and keeps a preempted request's lookups apart
    // (preempted_queries); vLLM 0.10 counted every get_computed_blocks call, the lookup of a
    // request resumed after preemption included (kv_cache_manager.py).
    const bool count = config_.counting == PrefixCountingMode::kPerLookup || !s.counted;
    if (count) {
      counters_.prefix_cache_queries += s.num_tokens();
      counters_.prefix_cache_hits += cached;
      s.counted = true;
    }
    if (s.remote_ns_per_block > 0 && s.cached_tokens < 0) {
      // Computed by a prefill pod: read, not computed (once: a preempted request recomputes).
      if (!start_remote_load(s, cached_blocks, plan)) break;  // head-of-line
      continue;
    }
    if (host_) {
      // What the GPU misses may be in host memory: its full blocks past the GPU's hit load
      // instead of being computed (vLLM's OffloadingConnector, get_num_new_matched_tokens).
      const std::int32_t most = s.num_tokens() / config_.block_size - cached_blocks;
      const std::int32_t found = host_->load(hashes, cached_blocks, most);
      if (count) {
        counters_.external_prefix_cache_queries += s.num_tokens();
        counters_.external_prefix_cache_hits += std::int64_t{found} * config_.block_size;
      }
      if (found > 0) {
        if (!start_load(s, cached_blocks, found, now, plan)) break;  // head-of-line
        continue;
      }
    }
    std::int32_t n = s.num_tokens() - cached;
    if (!config_.enable_chunked_prefill && n > budget) break;
    n = std::min(n, budget);
    const std::int32_t hold = config_.admit_whole_prompt ? s.num_tokens() : cached + n;
    if (!cache_.allocate(s.request->id, hashes, cached_blocks, hold)) break;  // head-of-line
    if (s.cached_tokens < 0) {
      s.cached_tokens = cached;
      plan.admitted.push_back(&s);
    }
    s.num_computed = cached;
    cache_.cache_full_blocks(s.request->id, hashes, cached + n);
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    plan.scheduled.push_back({running_.back().get(), n, cached});
    budget -= n;
  }
}

StepPlan Engine::plan_step(TimeNs now) {
  StepPlan plan;
  if (!loading_.empty()) finish_loads(now, plan);
  std::int32_t budget = config_.max_num_batched_tokens;
  const bool preempted = schedule_running(plan, budget);
  // vLLM admits no new request in a step that had to preempt one.
  if (!preempted) schedule_waiting(plan, budget, now);
  plan.batch.reserve(plan.scheduled.size());
  for (auto& e : plan.scheduled) {
    e.id = e.seq->id;
    e.seq_tokens = e.seq->num_tokens();
    e.prefill_leg = e.seq->prefill_leg;
    e.seq->in_flight_tokens += e.new_tokens;
    plan.batch.push_back(BatchEntry{e.new_tokens, e.context_tokens, e.drafts > 0});
    plan.num_tokens += e.new_tokens;
    const bool decode = e.seq->num_computed >= e.seq->prompt_tokens;
    ++(decode ? plan.num_decode_seqs : plan.num_prefill_seqs);
  }
  return plan;
}

StepOutcome Engine::finish_step(const StepPlan& plan) {
  StepOutcome out;
  ++counters_.steps;
  for (const auto& e : plan.scheduled) {
    Sequence& s = *e.seq;
    s.in_flight_tokens -= e.new_tokens;
    // Rejected drafts leave no KV behind: only the accepted ones join the computed tokens.
    const std::int32_t accepted = e.drafts > 0 ? accepted_drafts(e.drafts) : 0;
    s.num_computed += e.new_tokens - (e.drafts - accepted);
    if (host_) offer_to_host(s);
    if (s.num_computed < s.num_tokens() + accepted) continue;  // a prefill chunk: no token yet
    // The step covered every known token, so it sampled one more, after the accepted drafts.
    s.num_output += accepted + 1;
    counters_.generation_tokens += accepted + 1;
    // Outputs survive preemption, so this holds exactly once per request.
    if (s.num_output == 1) {
      out.first_tokens.push_back(&s);
      // vLLM's prompt_tokens_total adds the whole prompt length (cached tokens included) once,
      // with the first token (v1/metrics/stats.py, IterationStats.update_from_output). Counting
      // computed chunks instead left prefix hits out and counted a preempted prompt twice.
      counters_.prompt_tokens += s.request->prompt_tokens;
    }
  }
  // Finished sequences leave the running queue and free their blocks (reverse order, in cache).
  auto done = [&](const std::shared_ptr<Sequence>& s) { return s->num_output >= s->output_tokens; };
  for (auto it = running_.begin(); it != running_.end();) {
    if (done(*it)) {
      const Request& r = *(*it)->request;
      if (r.prefill_leg_for >= 0) {
        held_[r.id] = r.attempt;  // until the decode pod has read the prompt's KV
      } else {
        cache_.free(r.id);
      }
      ++counters_.request_success;
      out.finished.push_back(*it);
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void Engine::release(std::int64_t id, std::int32_t attempt) {
  auto it = held_.find(id);
  if (it == held_.end() || it->second != attempt) return;
  held_.erase(it);
  cache_.free(id);
}

bool Engine::abort(std::int64_t id, std::int32_t attempt) {
  const auto is = [id, attempt](const std::shared_ptr<Sequence>& s) {
    return s->request->id == id && s->request->attempt == attempt;
  };
  if (const auto it = std::find_if(waiting_.begin(), waiting_.end(), is); it != waiting_.end()) {
    waiting_.erase(it);  // a waiting request holds no blocks (a preempted one gave them back)
    return true;
  }
  for (auto* queue : {&running_, &loading_}) {
    if (const auto it = std::find_if(queue->begin(), queue->end(), is); it != queue->end()) {
      cache_.free(id);
      queue->erase(it);
      return true;
    }
  }
  return false;
}

Sequence* Engine::under_way(std::int64_t id, std::int32_t attempt) const {
  const auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& s) {
    return s->in_flight() && s->request->id == id && s->request->attempt == attempt;
  });
  return it == running_.end() ? nullptr : it->get();
}

bool Engine::in_flight(std::int64_t id, std::int32_t attempt) const {
  return under_way(id, attempt) != nullptr;
}

bool Engine::cancel(std::int64_t id, std::int32_t attempt) {
  Sequence* s = under_way(id, attempt);
  if (s != nullptr) s->cancelled = true;
  return s != nullptr;
}

std::int32_t Engine::held_blocks() const {
  std::int32_t n = 0;
  for (const auto& [id, attempt] : held_) n += cache_.blocks_held(id);
  return n;
}

std::vector<RequestPtr> Engine::abort_all() {
  std::vector<RequestPtr> out;
  for (const auto& [id, attempt] : held_) cache_.free(id);
  held_.clear();
  for (auto& s : running_) {
    cache_.free(s->request->id);
    out.push_back(s->request);
  }
  for (auto& s : loading_) {
    cache_.free(s->request->id);
    out.push_back(s->request);
  }
  for (auto& s : waiting_) out.push_back(s->request);
  running_.clear();
  loading_.clear();
  waiting_.clear();
  return out;
}

const ParamSpec& server_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .integer("block_size", 16, "KV block size in tokens (vLLM --block-size)", 1, 1024)
          .text("vllm_version", kDefaultVllmVersion,
                "the vLLM release the pod runs, for the settings whose default changed between "
                "releases and are left out here: gpu_memory_utilization and "
                "estimate_cudagraph_memory (e.g. 0.11.0; MAJOR.MINOR[.PATCH])")
          .real("gpu_memory_utilization", 0.0,
                "fraction of GPU memory vLLM may use; 0 = vllm_version's default: 0.9 before "
                "v0.20, 0.92 since (vllm-project/vllm#38284, vllm/config/cache.py)",
                0.0, 1.0)
          .integer("max_num_batched_tokens", 0,
                   "token budget of one engine step; 0 = vLLM's default for the GPU", 0, 1e8)
          .integer("max_num_seqs", 0, "most sequences in one step; 0 = vLLM's default for the GPU",
                   0, 1e6)
          .boolean("enable_prefix_caching", true, "automatic prefix caching (vLLM V1 default on)")
          .boolean("enable_chunked_prefill", true, "split long prefills across steps (V1 default)")
          .boolean("admit_whole_prompt", false,
                   "admit a waiting request only when its whole prompt's blocks are free (off: "
                   "blocks for each chunk as it is scheduled, as vLLM V1's scheduler allocates "
                   "them)")
          .boolean("async_scheduling", false,
                   "schedule the next step while the GPU runs this one (vLLM --async-scheduling): "
                   "the step's host overhead overlaps GPU work. vLLM has turned it on by default "
                   "since about v0.12; fleetsim keeps it off, whose serial host overhead matches "
                   "the decoding of current servers better (docs/fidelity-notes.md)")
          .text("scheduling_policy", "fcfs",
                "the engine's queue (vLLM --scheduling-policy): fcfs (arrival order; the newest "
                "running request preempted first) or priority (the requests' priority, from "
                "their SLO class's slo.classes.NAME.priority, then arrival; the lowest-priority "
                "running request preempted first)",
                {"fcfs", "priority"})
          .text("prefix_counting", "per_request",
                "how prefix-cache queries are counted: per_request (once, as current vLLM "
                "does) or per_lookup (each lookup, a waiting request's retries and a preempted "
                "request's resumption included, as vLLM 0.10 did)",
                {"per_request", "per_lookup"})
          .integer("kv_cache_dtype_bytes", 2, "bytes per KV element (2 = bf16/fp16, 1 = fp8)", 1, 4)
          .integer("tensor_parallel_size", 1, "GPUs per pod (tensor parallelism)", 1, 64)
          .integer("pipeline_parallel_size", 1,
                   "pipeline stages of a pod (vLLM --pipeline-parallel-size): each stage's "
                   "tensor_parallel_size GPUs hold a 1/pp share of the layers, and up to pp "
                   "microbatches of different requests run through the stages at once (vLLM "
                   "V1's batch queue); a pod takes tensor_parallel_size x pipeline_parallel_size "
                   "GPUs; needs the roofline cost model",
                   1, 64)
          .boolean(
              "enable_expert_parallel", false,
              "vLLM's --enable-expert-parallel: a mixture of experts' experts are spread whole "
              "over the pod's tensor-parallel GPUs instead of split across them, and a step "
              "waits for the GPU its tokens load most (no effect on a dense model or at "
              "tensor_parallel_size 1)")
          // 1e8 blocks is 1.6e9 tokens at block size 16, far beyond any GPU's KV capacity; the
          // cap keeps a typo from allocating tens of GB of block bookkeeping.
          .integer("num_gpu_blocks_override", 0,
                   "set the KV cache size in blocks directly (0 = derive it as vLLM does)", 0, 1e8)
          .text("estimate_cudagraph_memory", "auto",
                "set the CUDA graphs' memory (0.75 GiB a GPU) aside before sizing the KV cache "
                "(true), as vLLM does with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, or "
                "capture them after it, out of the memory gpu_memory_utilization leaves free "
                "(false); auto = vllm_version's default: false before v0.20, true since "
                "(vllm-project/vllm#38284), and from v0.25.1 true only for mixture-of-experts "
                "models (dense ones run on Model Runner V2, which sets nothing aside, "
                "vllm-project/vllm#49224)",
                {"auto", "true", "false"})
          .integer("max_model_len", 0,
                   "longest sequence (prompt + max_tokens) the server accepts; a longer request "
                   "gets HTTP 400, and vLLM refuses to start when one such request does not fit "
                   "its KV cache; 0 = the model's max_position_embeddings (vLLM's default)",
                   0, 1e8)
          .boolean("allow_long_max_model_len", false,
                   "accept a max_model_len beyond the model's max_position_embeddings, as vLLM "
                   "does with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (for a model served past its "
                   "trained length, e.g. with extended rope scaling)")
          .real("kv_offloading_size_gib", 0,
                "host memory for KV blocks copied out of the GPU as they are computed, GiB summed "
                "over the pod's tensor-parallel ranks (vLLM --kv-offloading-size, native "
                "backend, LRU); a prefix the GPU no longer holds loads from there instead of "
                "being recomputed; 0 = off",
                0, 1e6)
          .real("kv_offload_bandwidth_gbs", 0,
                "host-to-GPU bandwidth of those loads per GPU, GB/s; 0 = the GPU's PCIe link x "
                "0.78 (the vLLM blog 'Inside vLLM's New Offloading Connector', 2026-01-08: about "
                "50 GB/s one way on an H100's PCIe Gen5 x16, 64 GB/s)",
                0, 1e5)
          .text("speculative_method", "none",
                "speculative decoding (vLLM --speculative-config method): none; ngram (prompt "
                "lookup on the CPU, no GPU cost); eagle or mtp (a one-layer draft head with an "
                "lm_head, run once per draft position after each step)",
                spec_method_names())
          .integer("num_speculative_tokens", 0,
                   "draft tokens proposed per decoding request per step and verified in its next "
                   "step (1 + k tokens of the step's budget); 0 = no speculation whatever the "
                   "method",
                   0, 64)
          .real("speculative_acceptance", 0.71,
                "chance that the target accepts a draft token given that the drafts before it "
                "were, the same at every position; it depends on the drafter and the data. "
                "Default: EAGLE-3 on Llama-3.1-8B-Instruct, MT-Bench, k = 3 (vLLM "
                "tests/v1/spec_decode/test_acceptance_length.py: 0.73, 0.52, 0.35 of drafts "
                "accepted up to positions 1-3, i.e. 0.73, 0.71, 0.68 each given the previous; "
                "mean acceptance length 2.60)",
                0.0, 1.0)
          .real("kv_transfer_gbs", 50,
                "prefill/decode disaggregation: the network a decode pod reads a prompt's KV "
                "over, GB/s per GPU (each tensor-parallel rank its share, at once); default: one "
                "400 Gb/s ConnectX-7 NIC per GPU, as in NVIDIA DGX H100/H200, at line rate",
                0.001, 1e5)
          .real("kv_transfer_hold_s", 480,
                "prefill/decode disaggregation: how long a prefill pod keeps a finished prompt's "
                "KV for a decode pod that has not read it (vLLM's "
                "VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480 s)",
                0.001, 1e6)
          .text("kv_load_failure_policy", "recompute",
                "prefill/decode disaggregation: a decode pod whose read of a prompt's KV failed "
                "computes the prompt itself (recompute) or fails the request with HTTP 500 "
                "(fail); vLLM's kv_transfer_config kv_load_failure_policy, default recompute",
                {"recompute", "fail"})
          .real("kv_transfer_latency_ms", 0.0,
                "prefill/decode disaggregation: fixed cost per request of reading its KV from "
                "the prefill pod (NIXL's descriptor exchange and notification), beyond the "
                "gateway's network latency for the sidecar's hops",
                0)
          .real("api_overhead_ms", 9.0,
                "API-server CPU time per request before the engine sees it: HTTP parsing, "
                "request validation, chat template (fixed part); a process serves one request "
                "at a time, in arrival order. Default: what two measured bursts of vLLM "
                "completions took a request, less tokenization (docs/calibration.md)",
                0)
          .real("api_overhead_ms_per_1k_tokens", 1.5,
                "API-server CPU time per 1,000 prompt tokens (tokenization of the whole "
                "history)",
                0)
          .integer("api_server_count", 1,
                   "API-server processes in front of the engine (vLLM's --api-server-count); "
                   "each takes the next request when it is free",
                   1, 1024);
  return kSpec;
}

EngineConfig engine_config_from(const Params& server, double gpu_memory_gib,
                                const std::string& gpu_name) {
  EngineConfig c;
  c.block_size = static_cast<std::int32_t>(server.get_int("block_size"));
  std::string lower = gpu_name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  const bool large = gpu_memory_gib >= 70.0 && lower.find("a100") == std::string::npos;
  c.max_num_batched_tokens = large ? 8192 : 2048;
  c.max_num_seqs = large ? 1024 : 256;
  if (server.get_int("max_num_batched_tokens") > 0) {
    c.max_num_batched_tokens = static_cast<std::int32_t>(server.get_int("max_num_batched_tokens"));
  }
  if (server.get_int("max_num_seqs") > 0) {
    c.max_num_seqs = static_cast<std::int32_t>(server.get_int("max_num_seqs"));
  }
  c.enable_prefix_caching = server.get_bool("enable_prefix_caching");
  c.enable_chunked_prefill = server.get_bool("enable_chunked_prefill");
  c.admit_whole_prompt = server.get_bool("admit_whole_prompt");
  c.async_scheduling = server.get_bool("async_scheduling");
  c.priority_scheduling = server.get_string("scheduling_policy") == "priority";
  c.fail_on_kv_load_error = server.get_string("kv_load_failure_policy") == "fail";
  const SpecMethod spec = spec_method_from(server.get_string("speculative_method"));
  c.num_speculative_tokens = static_cast<std::int32_t>(server.get_int("num_speculative_tokens"));
  if (spec == SpecMethod::kNone && c.num_speculative_tokens > 0) {
    throw ScenarioError("server.num_speculative_tokens (" +
                        std::to_string(c.num_speculative_tokens) +
                        ") needs server.speculative_method: ngram, eagle or mtp");
  }
  c.spec_method = c.num_speculative_tokens > 0 ? spec : SpecMethod::kNone;
  c.spec_acceptance = server.get_double("speculative_acceptance");
  c.counting = server.get_string("prefix_counting") == "per_lookup"
                   ? PrefixCountingMode::kPerLookup
                   : PrefixCountingMode::kPerRequest;
  return c;
}

}  // namespace fleetsim
