// Observers see what happens to requests and pods; metrics, traces and time series are built
// from these signals instead of edits to the core loop.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "models/engine.h"
#include "models/request.h"
#include "sim/time.h"

namespace fleetsim {

// How a request ended. Errors carry the class a client would see.
// kBadRequest400: the server refused the request itself (longer than its max_model_len), as
// vLLM's API server answers HTTP 400; a client does not retry it.
// kServerError500: the engine failed the request (a prompt's KV read from a prefill pod failed
// under kv_load_failure_policy fail); a client retries it like a 502.
// kShed429: the gateway shed a sheddable request (negative priority) while every pod was
// saturated, as the Gateway API Inference Extension's EPP answers HTTP 429 Too Many Requests.
enum class Outcome {
  kOk,
  kNoPod503,
  kRefused502,
  kTimeout,
  kMidStream,
  kBadRequest400,
  kServerError500,
  kShed429
};
const char* outcome_name(Outcome o);

class FleetObserver {
 public:
  virtual ~FleetObserver() = default;
  virtual void on_arrival(const Request& r, TimeNs t) { (void)r, (void)t; }
  virtual void on_dispatch(const Request& r, int pod, TimeNs t) { (void)r, (void)pod, (void)t; }
  // Prefill/decode disaggregation: the prompt's prefill leg sent on to prefill pod `pod`.
  virtual void on_prefill_leg(const Request& leg, int pod, TimeNs t) {
    (void)leg, (void)pod, (void)t;
  }
  // The engine admitted the request with `cached_tokens` prefix-cache hits.
  virtual void on_admitted(const Request& r, int pod, std::int32_t cached_tokens, TimeNs t) {
    (void)r, (void)pod, (void)cached_tokens, (void)t;
  }
  // First token as the client sees it.
  virtual void on_first_token(const Request& r, int pod, TimeNs t) { (void)r, (void)pod, (void)t; }
  // An attempt ended (a retried request ends once per attempt; the last one is its outcome).
  virtual void on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) {
    (void)r, (void)pod, (void)outcome, (void)t;
  }
  virtual void on_step(int pod, const StepPlan& plan, TimeNs start, TimeNs duration) {
    (void)pod, (void)plan, (void)start, (void)duration;
  }
  // A gateway replica's health checks marked a pod down or up (replica 0 alone, or for all of
  // them, when the replicas share one belief).
  virtual void on_health_change(int pod, bool healthy, TimeNs t, int replica) {
    (void)pod, (void)healthy, (void)t, (void)replica;
  }
};

// Fans every signal out to several observers, in the order they were added.
class ObserverList : public FleetObserver {
 public:
  void add(FleetObserver* o) { observers_.push_back(o); }
  void on_arrival(const Request& r, TimeNs t) override {
    for (auto* o : observers_) o->on_arrival(r, t);
  }
  void on_dispatch(const Request& r, int pod, TimeNs t) override {
    for (auto* o : observers_) o->on_dispatch(r, pod, t);
  }
  void on_prefill_leg(const Request& leg, int pod, TimeNs t) override {
    for (auto* o : observers_) o->on_prefill_leg(leg, pod, t);
  }
  void on_admitted(const Request& r, int pod, std::int32_t cached, TimeNs t) override {
    for (auto* o : observers_) o->on_admitted(r, pod, cached, t);
  }
  void on_first_token(const Request& r, int pod, TimeNs t) override {
    for (auto* o : observers_) o->on_first_token(r, pod, t);
  }
  void on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) override {
    for (auto* o : observers_) o->on_finished(r, pod, outcome, t);
  }
  void on_step(int pod, const StepPlan& plan, TimeNs start, TimeNs duration) override {
    for (auto* o : observers_) o->on_step(pod, plan, start, duration);
  }
  void on_health_change(int pod, bool healthy, TimeNs t, int replica) override {
    for (auto* o : observers_) o->on_health_change(pod, healthy, t, replica);
  }

 private:
  std::vector<FleetObserver*> observers_;
};

}  // namespace fleetsim
