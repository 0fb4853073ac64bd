#include "sim/fleet/pod.h"

#include <algorithm>
#include <utility>

#include "sim/errors.h"

namespace fleetsim {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kNoPod503:
      return "http_503";
    case Outcome::kRefused502:
      return "http_502";
    case Outcome::kTimeout:
      return "timeout";
    case Outcome::kMidStream:
      return "mid_stream";
    case Outcome::kBadRequest400:
      return "http_400";
    case Outcome::kServerError500:
      return "http_500";
    case Outcome::kShed429:
      return "http_429";
  }
  return "?";
}

const char* pod_health_name(PodHealth h) {
  switch (h) {
    case PodHealth::kUp:
      return "up";
    case PodHealth::kRefusing:
      return "refusing";
    case PodHealth::kBlackHole:
      return "black_hole";
    case PodHealth::kLoading:
      return "loading";
    case PodHealth::kDraining:
      return "draining";
  }
  return "?";
}

Pod::Pod(int index, std::string name, EventLoop& loop, const PodConfig& config,
         std::shared_ptr<const CostModel> cost, FleetObserver& observer)
    : index_(index),
      name_(std::move(name)),
      loop_(loop),
      config_(config),
      cost_(std::move(cost)),
      observer_(observer),
      engine_(std::make_unique<Engine>(config.engine, config.num_blocks)),
      stages_(std::max(config.pipeline_parallel_size, 1)),
      api_free_at_(static_cast<size_t>(std::max(config.api_server_count, 1)), 0) {}

EngineCounters Pod::counters() const {
  EngineCounters c = engine_->counters();
  c += retired_;
  return c;
}

void Pod::receive(RequestPtr r) {
  switch (health_) {
    case PodHealth::kUp:
      break;
    case PodHealth::kBlackHole:
      return;  // nobody answers; the gateway's timeout decides
    case PodHealth::kRefusing:
    case PodHealth::kLoading:
    case PodHealth::kDraining:
      listener_->on_pod_failed(r, index_, Outcome::kRefused502);
      return;
  }
  in_api_stage_.push_back({r->id, r->attempt, false});
  const auto overhead = config_.api_overhead_fixed +
                        static_cast<TimeNs>(config_.api_overhead_ns_per_token * r->prompt_tokens);
  // vLLM's frontend parses, templates and tokenizes on one asyncio loop with one tokenizer
  // thread, so a burst is taken in order, one request after another, by the first process free.
  const auto process = std::min_element(api_free_at_.begin(), api_free_at_.end());
  *process = std::max(*process, loop_.now()) + overhead;
  loop_.schedule_at(*process, [this, r = std::move(r), epoch = epoch_]() mutable {
    enqueue(std::move(r), epoch);
  });
}

void Pod::enqueue(RequestPtr r, std::uint64_t epoch) {
  if (epoch != epoch_) {
    // The pod crashed while its API server held the request (the crash reset in_api_stage_).
    if (health_ != PodHealth::kBlackHole) listener_->on_pod_failed(r, index_, Outcome::kRefused502);
    return;
  }
  const auto it = std::find_if(in_api_stage_.begin(), in_api_stage_.end(), [&r](const InApi& a) {
    return a.id == r->id && a.attempt == r->attempt;
  });
  const bool aborted = it != in_api_stage_.end() && it->aborted;
  if (it != in_api_stage_.end()) in_api_stage_.erase(it);
  if (aborted) {
    stop_if_drained();  // the gateway has finished it already
    return;
  }
  // vLLM's API server checks the length after tokenizing (serving_engine.py, _validate_input):
  // the prompt and the tokens it may generate must fit max_model_len.
  if (config_.max_model_len > 0 &&
      std::int64_t{r->prompt_tokens} + r->output_tokens > config_.max_model_len) {
    listener_->on_pod_failed(r, index_, Outcome::kBadRequest400);
    return;
  }
  if (r->prefill_pod >= 0 && r->prefill_leg_for < 0) {
    // llm-d's sidecar: the prompt goes to the prefill pod first, with one output token.
    auto leg = std::make_shared<Request>(*r);
    leg->output_tokens = 1;
    leg->prefill_leg_for = index_;
    awaiting_prefill_[r->id] = std::move(r);
    listener_->on_pod_prefill_leg(leg, index_);
    return;
  }
  engine_->add(std::move(r), loop_.now());
  if (can_plan()) start_step();
}

RequestPtr Pod::take_awaiting_prefill(const Request& leg) {
  auto it = awaiting_prefill_.find(leg.id);
  if (it == awaiting_prefill_.end() || it->second->attempt != leg.attempt) return nullptr;
  RequestPtr r = std::move(it->second);
  awaiting_prefill_.erase(it);
  return r;
}

void Pod::prefill_done(const RequestPtr& leg, int source, std::int32_t prefill_tp,
                       bool source_link_down, double source_slowdown) {
  RequestPtr r = take_awaiting_prefill(*leg);
  if (!r) return;
  const auto t = static_cast<size_t>(std::clamp(prefill_tp, 1, config_.tensor_parallel_size));
  const double block_bytes =
      config_.kv_transfer_bytes.at(t) * static_cast<double>(config_.engine.block_size);
  const double slowdown = std::max(source_slowdown, kv_link_slowdown_);
  const RemoteKv remote{saturated_ns(block_bytes * slowdown / config_.kv_transfer_gbs),
                        config_.kv_transfer_latency, source_link_down || kv_link_down_, source,
                        static_cast<double>(t) / std::max(prefill_tp, 1)};
  engine_->add(std::move(r), loop_.now(), remote);
  if (can_plan()) start_step();
}

void Pod::prefill_failed(const RequestPtr& leg, Outcome outcome) {
  RequestPtr r = take_awaiting_prefill(*leg);
  if (!r) return;
  // The sidecar answers with the prefill pod's error; a stream that never began is a 502.
  listener_->on_pod_failed(r, index_,
                           outcome == Outcome::kMidStream ? Outcome::kRefused502 : outcome);
  stop_if_drained();
}

void Pod::release_prefill_kv(std::int64_t id, std::int32_t attempt) {
  engine_->release(id, attempt);
  // Freed blocks may admit what waited for them.
  wake();
}

bool Pod::can_plan() const {
  if (config_.pipeline_parallel_size > 1) {
    return pipeline_.size() < static_cast<size_t>(config_.pipeline_parallel_size);
  }
  return !busy_;
}

void Pod::wake() {
  if (can_plan() && health_ != PodHealth::kBlackHole && engine_->has_work()) start_step();
}

StepPlan Pod::plan_next() {
  StepPlan plan = engine_->plan_step(loop_.now());
  // vLLM's kv_load_failure_policy fail: the request ends with an error before its first token.
  for (const RequestPtr& r : plan.load_failed) {
    listener_->on_pod_failed(r, index_, Outcome::kServerError500);
  }
  // Admitted requests may have nothing to compute yet (their prefix loads from host memory).
  for (const Sequence* s : plan.admitted) {
    // A prefill leg is the decode pod's business; its request is admitted there.
    if (s->request->prefill_leg_for >= 0) continue;
    observer_.on_admitted(*s->request, index_, s->cached_tokens, loop_.now());
  }
  for (const Sequence* s : plan.remote_reads) start_kv_read(*s);
  return plan;
}

void Pod::go_idle(const StepPlan& empty_plan) {
  busy_ = false;
  // Idle while prefixes load from host memory: plan again when the first load ends.
  if (const auto done = engine_->next_load_done()) {
    loop_.schedule_at(std::max(*done, loop_.now()), [this, epoch = epoch_] {
      if (epoch == epoch_ && can_plan()) start_step();
    });
  }
  // A draining pod whose last request just failed its read has nothing left.
  if (!empty_plan.load_failed.empty()) stop_if_drained();
}

void Pod::start_microbatches() {
  while (can_plan()) {
    StepPlan plan = plan_next();
    if (plan.empty()) {
      if (pipeline_.empty()) go_idle(plan);
      return;
    }
    // The cost model times one stage's layers; its host part (scheduling, input preparation,
    // sampling) is paid once a microbatch, on the driver.
    const TimeNs whole = cost_->step_time(plan.batch);
    const TimeNs host = std::min(cost_->host_overhead(), whole);
    const TimeNs stage = whole - host;
    const double send_ns =
        config_.pipeline_send_gbs > 0
            ? config_.pipeline_send_bytes_per_token * plan.num_tokens / config_.pipeline_send_gbs
            : 0.0;
    const TimeNs send = config_.pipeline_send_latency + saturated_ns(send_ns);
    const TimeNs now = loop_.now();
    const TimeNs end = stages_.admit(now, scale_ns(host, slowdown_), scale_ns(stage, slowdown_),
                                     scale_ns(send, slowdown_));
    busy_ = true;
    pipeline_.push_back({std::move(plan), now, {}});
    pipeline_.back().end = loop_.schedule_at(end, [this] { end_microbatch(); });
  }
}

void Pod::end_microbatch() {
  Microbatch done = std::move(pipeline_.front());
  pipeline_.pop_front();
  busy_ = !pipeline_.empty();
  finish(done.plan, done.start);
  apply_aborts();
  start_step();
  stop_if_drained();
}

void Pod::start_step() {
  if (config_.pipeline_parallel_size > 1) {
    start_microbatches();
    return;
  }
  current_ = plan_next();
  if (current_.empty()) {
    go_idle(current_);
    return;
  }
  busy_ = true;
  step_start_ = loop_.now();
  TimeNs dt = cost_->step_time(current_.batch);
  if (config_.engine.num_speculative_tokens > 0) {
    // Every request that samples this step gets its drafts for the next one.
    std::int32_t sampling = 0;
    std::int64_t context = 0;
    for (const ScheduledSeq& e : current_.scheduled) {
      if (e.context_tokens + e.new_tokens < e.seq->num_tokens()) continue;
      ++sampling;
      context += e.context_tokens + e.new_tokens;
    }
    dt += config_.draft.time(sampling, context, config_.engine.num_speculative_tokens);
  }
  if (share_) {
    start_shared_step(dt);
    return;
  }
  if (config_.engine.async_scheduling) dt = overlapped_step_time(dt, cost_->host_overhead());
  if (slowdown_ != 1.0) dt = scale_ns(dt, slowdown_);
  step_event_ = loop_.schedule_in(dt, [this] { end_step(); });
}

void Pod::abort(const Request& r) {
  if (health_ != PodHealth::kUp && health_ != PodHealth::kDraining) return;
  // Still waiting for its prompt on a prefill pod: the sidecar drops it.
  if (auto it = awaiting_prefill_.find(r.id);
      it != awaiting_prefill_.end() && it->second->attempt == r.attempt) {
    awaiting_prefill_.erase(it);
    stop_if_drained();
    return;
  }
  // Still in the API server: dropped before it reaches the engine.
  for (InApi& a : in_api_stage_) {
    if (a.id == r.id && a.attempt == r.attempt) {
      a.aborted = true;
      return;
    }
  }
  aborts_.emplace_back(r.id, r.attempt);
  if (busy_) return;  // the step under way still computes it
  apply_aborts();
  wake();
  stop_if_drained();
}

void Pod::apply_aborts() {
  // A request in a microbatch still under way gets no further one, and leaves when that ends.
  std::vector<std::pair<std::int64_t, std::int32_t>> later;
  for (const auto& abort : aborts_) {
    // Named copies, not structured bindings: lambdas capture those only from C++20 compilers
    // newer than the clang 14 of the sanitizer builds.
    const std::int64_t id = abort.first;
    const std::int32_t attempt = abort.second;
    if (engine_->cancel(id, attempt)) {
      later.emplace_back(id, attempt);
      continue;
    }
    if (!engine_->abort(id, attempt)) continue;  // it finished meanwhile
    std::erase(streamed_, id);
    std::erase_if(kv_reads_, [&](const auto& read) {
      if (read.first->id != id || read.first->attempt != attempt) return false;
      kv_network_->cancel(read.second);
      return true;
    });
  }
  aborts_ = std::move(later);
}

void Pod::start_kv_read(const Sequence& s) {
  if (kv_network_ == nullptr) throw InternalError("pod " + name_ + " reads KV with no network set");
  const double solo =
      static_cast<double>(s.loading_blocks) * static_cast<double>(s.remote_ns_per_block);
  auto arrived = [this, r = s.request, latency = s.remote_latency, fails = s.remote_load_fails] {
    std::erase_if(kv_reads_, [&r](const auto& read) { return read.first == r; });
    loop_.schedule_in(latency, [this, r, fails, epoch = epoch_] {
      if (epoch != epoch_) return;
      engine_->remote_read_done(*r, loop_.now());
      // The prefill pod may free the prompt's blocks now (a failed read sends no notification:
      // they stay held until kv_transfer_hold ends).
      if (!fails) listener_->on_pod_kv_read(r, index_);
      wake();
    });
  };
  kv_reads_.emplace_back(s.request,
                         kv_network_->start(index_, s.remote_source, s.remote_source_share,
                                            saturated_ns(solo), std::move(arrived)));
}

void Pod::start_shared_step(TimeNs dt) {
  // Only the GPU's part is time-sliced: the host's part (scheduling, input preparation,
  // sampling) runs on the pod's own CPU, leaving the GPU to its neighbours meanwhile.
  const TimeNs host_solo = std::min(cost_->host_overhead(), dt);
  const TimeNs host = scale_ns(host_solo, slowdown_);
  // Draft-model time (speculative decoding) is taken to keep the GPU as the target's step does.
  const GpuDemand demand = cost_->gpu_demand(current_.batch);
  gpu_job_ = share_->start(scale_ns(dt - host_solo, slowdown_), demand, [this, host] {
    gpu_job_ = 0;
    // With async scheduling the host's part overlapped the GPU's (overlapped_step_time).
    const TimeNs end = config_.engine.async_scheduling ? std::max(loop_.now(), step_start_ + host)
                                                       : loop_.now() + host;
    step_event_ = loop_.schedule_at(end, [this] { end_step(); });
  });
}

void Pod::publish_kv_events() {
  publish_events_ = true;
  engine_->set_kv_event_log(&events_);
}

void Pod::end_step() {
  finish(current_, step_start_);
  apply_aborts();
  start_step();
  stop_if_drained();
}

void Pod::finish(const StepPlan& plan, TimeNs start) {
  observer_.on_step(index_, plan, start, loop_.now() - start);
  const StepOutcome out = engine_->finish_step(plan);
  // Blocks were stored when this step was scheduled; vLLM publishes them once per step.
  if (publish_events_ && !events_.empty()) {
    listener_->on_pod_kv_events(index_, std::move(events_));
    events_.clear();
  }
  for (Sequence* s : out.first_tokens) {
    streamed_.push_back(s->request->id);
    listener_->on_pod_first_token(s->request, index_);
  }
  for (const auto& s : out.finished) {
    std::erase(streamed_, s->request->id);
    if (s->request->prefill_leg_for >= 0) {
      // Kept for the decode pod's read; after kv_transfer_hold the prefill pod lets go anyway.
      loop_.schedule_background_in(
          config_.kv_transfer_hold,
          [this, id = s->request->id, attempt = s->request->attempt, epoch = epoch_] {
            if (epoch == epoch_) release_prefill_kv(id, attempt);
          });
    }
    listener_->on_pod_finished(s->request, index_);
  }
}

void Pod::drain(std::function<void()> on_stopped) {
  if (health_ != PodHealth::kUp) {
    // Nothing serving: the process just exits.
    if (health_ == PodHealth::kLoading) crash(PodHealth::kRefusing);
    if (on_stopped) on_stopped();
    return;
  }
  health_ = PodHealth::kDraining;
  on_stopped_ = std::move(on_stopped);
  stop_if_drained();
}

void Pod::stop_if_drained() {
  if (health_ != PodHealth::kDraining || busy_ || !in_api_stage_.empty() ||
      !awaiting_prefill_.empty() || engine_->num_waiting() + engine_->num_running() > 0) {
    return;
  }
  health_ = PodHealth::kRefusing;
  notify_stopped();
}

void Pod::crash(PodHealth after) {
  ++epoch_;
  in_api_stage_.clear();
  std::fill(api_free_at_.begin(), api_free_at_.end(), 0);  // the backlog died with the process
  health_ = after;
  if (busy_ && pipeline_.empty()) {
    if (gpu_job_ != 0) share_->cancel(gpu_job_);
    loop_.cancel(step_event_);
  }
  for (const Microbatch& m : pipeline_) loop_.cancel(m.end);
  pipeline_.clear();
  stages_.reset();
  gpu_job_ = 0;
  for (const auto& [r, read] : kv_reads_) kv_network_->cancel(read);
  kv_reads_.clear();
  aborts_.clear();
  busy_ = false;
  current_ = StepPlan{};
  std::vector<RequestPtr> lost = engine_->abort_all();
  // The sidecar's requests waiting for their prefill die with the pod too.
  for (auto& [id, r] : awaiting_prefill_) lost.push_back(std::move(r));
  awaiting_prefill_.clear();
  // A black-holed node cannot even reset the connections: its requests hang until timeouts.
  if (after == PodHealth::kBlackHole) {
    for (const auto& r : lost) {
      if (std::find(streamed_.begin(), streamed_.end(), r->id) != streamed_.end()) {
        listener_->on_pod_stalled(r, index_);
      }
    }
    streamed_.clear();
    notify_stopped();
    return;
  }
  for (const auto& r : lost) {
    const bool streamed = std::find(streamed_.begin(), streamed_.end(), r->id) != streamed_.end();
    listener_->on_pod_failed(r, index_, streamed ? Outcome::kMidStream : Outcome::kRefused502);
  }
  streamed_.clear();
  notify_stopped();
}

void Pod::notify_stopped() {
  if (auto done = std::move(on_stopped_)) {
    on_stopped_ = nullptr;
    done();
  }
}

void Pod::restart(TimeNs load_time, bool keeps_run_alive) {
  if (health_ == PodHealth::kUp || health_ == PodHealth::kDraining) crash(PodHealth::kLoading);
  health_ = PodHealth::kLoading;
  // A new process: empty KV cache, counters from zero.
  retired_ = counters();
  engine_ = std::make_unique<Engine>(config_.engine, config_.num_blocks);
  if (publish_events_) {
    events_.clear();
    engine_->set_kv_event_log(&events_);
    listener_->on_pod_kv_events(index_, {KvEvent{KvEventKind::kCleared, 0}});
  }
  const std::uint64_t epoch = epoch_;
  auto ready = [this, epoch] {
    if (epoch == epoch_ && health_ == PodHealth::kLoading) health_ = PodHealth::kUp;
  };
  if (keeps_run_alive) {
    loop_.schedule_in(load_time, std::move(ready));
  } else {
    loop_.schedule_background_in(load_time, std::move(ready));
  }
}

}  // namespace fleetsim
