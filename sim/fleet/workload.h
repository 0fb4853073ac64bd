// The workload plug-in interface: a client that sends requests into the gateway. Closed-loop
// clients hear of completions; open-loop ones ignore them. Registered by name.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "models/request.h"
#include "sim/event_loop.h"
#include "sim/fleet/observer.h"
#include "sim/registry.h"

namespace fleetsim {

struct WorkloadContext {
  EventLoop* loop = nullptr;
  std::uint64_t seed = 0;
  std::int32_t block_size = 16;
  std::string model;
  // Hands a request to the gateway now. The workload fills everything but the id and hashes.
  std::function<void(Request)> submit;
};

// A client that cancels what is still in flight when its measurement window closes (guidellm's
// max-seconds constraint): requests unfinished at `end` are left out of the figures, and rates
// are taken over the window's length.
struct CancelWindow {
  TimeNs start = 0;
  TimeNs end = 0;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual void start() = 0;
  virtual void on_complete(const Request& r, Outcome outcome) = 0;
  // Empty: requests are measured until they finish, rates over the measured requests' span.
  virtual std::optional<CancelWindow> cancel_window() const { return std::nullopt; }
  // How many requests it will send, estimated from its parameters before it starts (a count, or
  // a rate over its duration), when the run stops at `horizon_s` (0: no horizon). Empty: it
  // cannot tell. For the run's up-front size check and its progress, never for a figure.
  virtual std::optional<double> expected_requests(double horizon_s) const {
    (void)horizon_s;
    return std::nullopt;
  }
};

using WorkloadRegistry = Registry<Workload, const WorkloadContext&>;

struct WorkloadRegistrar {
  WorkloadRegistrar(std::string name, std::string description, ParamSpec spec,
                    WorkloadRegistry::Factory factory) {
    WorkloadRegistry::instance().add(
        {std::move(name), std::move(description), std::move(spec), std::move(factory)});
  }
};

}  // namespace fleetsim
