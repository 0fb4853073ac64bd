// A pod on the clock: one model server (engine scheduler + KV cache + cost model) whose engine
// steps are events. A step is one event per pod, never one per token or per request.
#pragma once

#include <memory>
#include <string>

#include "models/cost_model.h"
#include "models/engine.h"
#include "sim/event_loop.h"
#include "sim/fleet/observer.h"

namespace fleetsim {

struct PodConfig {
  EngineConfig engine;
  std::int32_t num_blocks = 0;
  TimeNs api_overhead_fixed = 0;            // per request, before the engine sees it
  double api_overhead_ns_per_token = 0.0;   // per prompt token
};

// Who hears from the pod: the gateway, which relays to the client.
class PodListener {
 public:
  virtual ~PodListener() = default;
  virtual void on_pod_first_token(const RequestPtr& r, int pod) = 0;
  virtual void on_pod_finished(const RequestPtr& r, int pod) = 0;
};

class Pod {
 public:
  Pod(int index, std::string name, EventLoop& loop, const PodConfig& config,
      std::shared_ptr<const CostModel> cost, FleetObserver& observer);
  // The gateway that relays this pod's answers; set before the first request arrives.
  void set_listener(PodListener* listener) { listener_ = listener; }

  // A request reaches the pod's API server.
  void receive(RequestPtr r);

  int index() const { return index_; }
  const std::string& name() const { return name_; }
  const Engine& engine() const { return engine_; }

 private:
  void enqueue(RequestPtr r);
  void start_step();
  void end_step();

  int index_;
  std::string name_;
  EventLoop& loop_;
  PodConfig config_;
  std::shared_ptr<const CostModel> cost_;
  PodListener* listener_ = nullptr;
  FleetObserver& observer_;
  Engine engine_;
  StepPlan current_;
  bool busy_ = false;
};

}  // namespace fleetsim
