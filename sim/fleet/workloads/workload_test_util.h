// A stand-in for the fleet in workload tests: records what a workload submits (with the id and
// arrival the runner would give) and, for closed-loop workloads, completes every request a fixed
// time after it was sent.
#pragma once

#include <yaml-cpp/yaml.h>

#include <memory>
#include <string>
#include <vector>

#include "sim/event_loop.h"
#include "sim/fleet/workload.h"

namespace fleetsim::testing {

inline Params workload_params(const std::string& type, const std::string& yaml) {
  const auto& entry = WorkloadRegistry::instance().get(type, "workload");
  return entry.spec.resolve(YAML::Load(yaml), YamlWhere{"test.yaml", "workload"});
}

class WorkloadHarness {
 public:
  // service: time from a request's arrival to its completion (0 = never complete it).
  WorkloadHarness(const std::string& type, const std::string& yaml, TimeNs service = 0,
                  std::uint64_t seed = 7)
      : service_(service) {
    WorkloadContext ctx;
    ctx.loop = &loop_;
    ctx.seed = seed;
    ctx.model = "test-model";
    ctx.submit = [this](Request r) {
      r.id = static_cast<std::int64_t>(sent_.size());
      r.arrival = loop_.now();
      sent_.push_back(r);
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
      if (service_ > 0) {
        loop_.schedule_in(service_, [this, r] {
          --in_flight_;
          workload_->on_complete(r, Outcome::kOk);
        });
      }
    };
    workload_ = WorkloadRegistry::instance()
                    .get(type, "workload")
                    .factory(workload_params(type, yaml), ctx);
  }

  // Runs the workload to its end (or to `until`); returns what it sent.
  const std::vector<Request>& run(TimeNs until = INT64_MAX) {
    workload_->start();
    loop_.run(until);
    return sent_;
  }
  const std::vector<Request>& sent() const { return sent_; }
  int max_in_flight() const { return max_in_flight_; }
  const Workload& workload() const { return *workload_; }

 private:
  EventLoop loop_;
  TimeNs service_;
  std::unique_ptr<Workload> workload_;
  std::vector<Request> sent_;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

}  // namespace fleetsim::testing
