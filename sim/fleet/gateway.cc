#include "sim/fleet/gateway.h"

#include "sim/errors.h"

namespace fleetsim {

Gateway::Gateway(EventLoop& loop, std::vector<std::unique_ptr<Pod>>& pods,
                 std::unique_ptr<RoutingPolicy> policy, FleetObserver& observer,
                 GatewayConfig config)
    : loop_(loop),
      pods_(pods),
      policy_(std::move(policy)),
      observer_(observer),
      config_(config),
      inflight_(pods.size(), 0),
      inflight_tokens_(pods.size(), 0) {}

void Gateway::submit(RequestPtr r) {
  observer_.on_arrival(*r, loop_.now());
  if (config_.routing_latency > 0) {
    loop_.schedule_in(config_.routing_latency, [this, r = std::move(r)]() mutable { route(std::move(r)); });
  } else {
    route(std::move(r));
  }
}

std::vector<PodState> Gateway::candidates() const {
  std::vector<PodState> out;
  out.reserve(pods_.size());
  for (const auto& p : pods_) {
    PodState s;
    s.index = p->index();
    s.name = p->name();
    s.inflight_requests = inflight_[static_cast<size_t>(p->index())];
    s.inflight_tokens = inflight_tokens_[static_cast<size_t>(p->index())];
    s.waiting = p->engine().num_waiting();
    s.running = p->engine().num_running();
    s.kv_usage = p->engine().cache().usage();
    out.push_back(std::move(s));
  }
  return out;
}

void Gateway::route(RequestPtr r) {
  const std::vector<PodState> pods = candidates();
  const int pod = pods.empty() ? -1 : policy_->pick(*r, pods, RouteContext{loop_.now()});
  if (pod < 0) {
    observer_.on_finished(*r, -1, Outcome::kNoPod503, loop_.now());
    if (completion_) completion_(r, Outcome::kNoPod503);
    return;
  }
  if (pod >= static_cast<int>(pods_.size())) {
    throw InternalError("policy chose pod " + std::to_string(pod) + " of " +
                        std::to_string(pods_.size()));
  }
  const auto i = static_cast<size_t>(pod);
  ++inflight_[i];
  inflight_tokens_[i] += r->prompt_tokens + r->output_tokens;
  policy_->on_dispatched(*r, pod);
  observer_.on_dispatch(*r, pod, loop_.now());
  loop_.schedule_in(config_.network_latency,
                    [this, pod, r = std::move(r)]() mutable { pods_[static_cast<size_t>(pod)]->receive(std::move(r)); });
}

void Gateway::on_pod_first_token(const RequestPtr& r, int pod) {
  loop_.schedule_in(config_.network_latency,
                    [this, r, pod] { observer_.on_first_token(*r, pod, loop_.now()); });
}

void Gateway::on_pod_finished(const RequestPtr& r, int pod) {
  loop_.schedule_in(config_.network_latency, [this, r, pod] {
    const auto i = static_cast<size_t>(pod);
    --inflight_[i];
    inflight_tokens_[i] -= r->prompt_tokens + r->output_tokens;
    policy_->on_finished(*r, pod);
    observer_.on_finished(*r, pod, Outcome::kOk, loop_.now());
    if (completion_) completion_(r, Outcome::kOk);
  });
}

}  // namespace fleetsim
