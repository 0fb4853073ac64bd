#include "sim/fleet/pod.h"

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
      engine_(config.engine, config.num_blocks) {}

void Pod::receive(RequestPtr r) {
  const auto overhead =
      config_.api_overhead_fixed +
      static_cast<TimeNs>(config_.api_overhead_ns_per_token * r->prompt_tokens);
  loop_.schedule_in(overhead, [this, r = std::move(r)]() mutable { enqueue(std::move(r)); });
}

void Pod::enqueue(RequestPtr r) {
  engine_.add(std::move(r), loop_.now());
  if (!busy_) start_step();
}

void Pod::start_step() {
  current_ = engine_.plan_step();
  if (current_.empty()) {
    busy_ = false;
    return;
  }
  busy_ = true;
  for (const Sequence* s : current_.admitted) {
    observer_.on_admitted(*s->request, index_, s->cached_tokens, loop_.now());
  }
  const TimeNs dt = cost_->step_time(current_.batch);
  observer_.on_step(index_, current_, loop_.now(), dt);
  loop_.schedule_in(dt, [this] { end_step(); });
}

void Pod::end_step() {
  const StepOutcome out = engine_.finish_step(current_);
  for (Sequence* s : out.first_tokens) listener_->on_pod_first_token(s->request, index_);
  for (const auto& s : out.finished) listener_->on_pod_finished(s->request, index_);
  start_step();
}

}  // namespace fleetsim
