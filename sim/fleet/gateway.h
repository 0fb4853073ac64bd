// The gateway: takes a client's request, asks its routing policy for a pod, forwards it, and
// relays the streamed answer back. It counts in-flight requests per pod as a proxy does.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "policies/policy.h"
#include "sim/event_loop.h"
#include "sim/fleet/observer.h"
#include "sim/fleet/pod.h"

namespace fleetsim {

struct GatewayConfig {
  TimeNs network_latency = 0;  // one way, gateway <-> pod
  TimeNs routing_latency = 0;  // the policy's own decision time (e.g. an EPP round trip)
};

class Gateway : public PodListener {
 public:
  using Completion = std::function<void(const RequestPtr&, Outcome)>;

  Gateway(EventLoop& loop, std::vector<std::unique_ptr<Pod>>& pods,
          std::unique_ptr<RoutingPolicy> policy, FleetObserver& observer, GatewayConfig config);

  // A client sends a request now.
  void submit(RequestPtr r);
  void on_completion(Completion c) { completion_ = std::move(c); }

  void on_pod_first_token(const RequestPtr& r, int pod) override;
  void on_pod_finished(const RequestPtr& r, int pod) override;

  std::int32_t inflight(int pod) const { return inflight_[static_cast<size_t>(pod)]; }

 private:
  void route(RequestPtr r);
  std::vector<PodState> candidates() const;

  EventLoop& loop_;
  std::vector<std::unique_ptr<Pod>>& pods_;
  std::unique_ptr<RoutingPolicy> policy_;
  FleetObserver& observer_;
  GatewayConfig config_;
  Completion completion_;
  std::vector<std::int32_t> inflight_;
  std::vector<std::int64_t> inflight_tokens_;
};

}  // namespace fleetsim
