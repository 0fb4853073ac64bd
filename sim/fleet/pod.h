// A pod on the clock: one model server (engine scheduler + KV cache + cost model) whose engine
// steps are events. A step is one event per pod, never one per token or per request. Faults
// change how the pod answers: it may refuse connections, swallow them, load its model, or run
// slower.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/cost_model.h"
#include "models/engine.h"
#include "models/spec_decode.h"
#include "sim/event_loop.h"
#include "sim/fleet/gpu_share.h"
#include "sim/fleet/kv_network.h"
#include "sim/fleet/observer.h"
#include "sim/fleet/pipeline_stages.h"

namespace fleetsim {

struct PodConfig {
  EngineConfig engine;
  std::int32_t num_blocks = 0;
  // A request's CPU time in an API-server process before the engine sees it. The processes
  // take requests in arrival order, one at a time each.
  TimeNs api_overhead_fixed = 0;
  double api_overhead_ns_per_token = 0.0;  // per prompt token
  int api_server_count = 1;
  DraftCost draft;  // the speculative drafter's GPU time after each step (none: 0)
  // vLLM's max_model_len: a request whose prompt plus max_tokens exceeds it is refused with
  // HTTP 400 by the API server (0 = no limit).
  std::int32_t max_model_len = 0;
  std::int32_t tensor_parallel_size = 1;
  // Pipeline parallelism: stages of tensor_parallel_size GPUs each, whose steps (microbatches)
  // overlap (pipeline_stages.h). The cost model times one stage; a microbatch's activations
  // (hidden states and residual, BF16) cross from stage to stage at this many bytes a token,
  // this bandwidth (GB/s) and this fixed latency.
  std::int32_t pipeline_parallel_size = 1;
  double pipeline_send_bytes_per_token = 0;
  double pipeline_send_gbs = 0;
  TimeNs pipeline_send_latency = 0;
  // Prefill/decode disaggregation: bytes of one prompt token's KV that one GPU of this pod reads
  // from a prefill pod when the smaller of the two pods' tensor-parallel sizes is t
  // (kv_transfer_bytes[t], t = 1..tensor_parallel_size; the side with fewer GPUs sets the pace),
  // the network's bandwidth per GPU and a fixed latency per request.
  std::vector<double> kv_transfer_bytes;
  double kv_transfer_gbs = 0;
  TimeNs kv_transfer_latency = 0;
  TimeNs kv_transfer_hold = 0;  // a prefill pod frees an unread prompt's KV after this
};

// How a pod answers a connection.
enum class PodHealth {
  kUp,         // serving
  kRefusing,   // process gone, node up: connection refused at once
  kBlackHole,  // node or network gone: connections hang until the caller times out
  kLoading,    // process restarted, model still loading: not ready, refuses requests
  kDraining,   // shutting down gracefully: refuses new connections, finishes what it holds
};
const char* pod_health_name(PodHealth h);

// Who hears from the pod: the gateway, which relays to the client.
class PodListener {
 public:
  virtual ~PodListener() = default;
  virtual void on_pod_first_token(const RequestPtr& r, int pod) = 0;
  virtual void on_pod_finished(const RequestPtr& r, int pod) = 0;
  // The pod could not serve the request (refused it, or died while serving it).
  virtual void on_pod_failed(const RequestPtr& r, int pod, Outcome outcome) = 0;
  // A batch of the pod's KV events (only when publishing is on).
  virtual void on_pod_kv_events(int pod, std::vector<KvEvent> events) = 0;
  // The pod went silent in the middle of streaming this request (its node vanished).
  virtual void on_pod_stalled(const RequestPtr& r, int pod) = 0;
  // Prefill/decode disaggregation: the decode pod's sidecar sends `leg` (the request's prompt,
  // one output token) to the prefill pod `leg->prefill_pod`; later the decode pod has read the
  // prompt's KV from there, which the prefill pod may then free.
  virtual void on_pod_prefill_leg(const RequestPtr& leg, int decode_pod) = 0;
  virtual void on_pod_kv_read(const RequestPtr& r, int decode_pod) = 0;
};

class Pod {
 public:
  Pod(int index, std::string name, EventLoop& loop, const PodConfig& config,
      std::shared_ptr<const CostModel> cost, FleetObserver& observer);
  // The gateway that relays this pod's answers; set before the first request arrives.
  void set_listener(PodListener* listener) { listener_ = listener; }
  // Co-located on a GPU with other pods, which share it (gpu_share.h).
  void set_gpu_share(std::shared_ptr<GpuShare> share) { share_ = std::move(share); }
  // The network prompts' KV is read by from prefill pods; set before the first request arrives.
  void set_kv_network(KvNetwork* network) { kv_network_ = network; }
  // Publish KV events (vLLM --kv-events-config) after every engine step.
  void publish_kv_events();

  // A request reaches the pod's API server.
  void receive(RequestPtr r);
  // Prefill/decode disaggregation, on a decode pod: the prefill pod (of tensor-parallel size
  // `prefill_tp`) computed `leg`'s prompt, so the request it was for joins the engine to read
  // that KV from pod `source` (a read that fails when `source_link_down`, or this pod's own
  // link is, and runs `source_slowdown` times slower, or this pod's own factor if larger,
  // sharing both pods' links with the other reads: kv_network.h); or the leg failed, and so
  // does the request.
  void prefill_done(const RequestPtr& leg, int source, std::int32_t prefill_tp,
                    bool source_link_down, double source_slowdown);
  void prefill_failed(const RequestPtr& leg, Outcome outcome);
  // The client of `r` went away (the gateway timed it out and reset the stream): vLLM aborts the
  // request, between steps, freeing its blocks and the read of its prompt. A request still in
  // the API stage (a few milliseconds) is not caught.
  void abort(const Request& r);
  // On a prefill pod: the decode pod has read request `id`'s prompt KV (attempt `attempt`).
  void release_prefill_kv(std::int64_t id, std::int32_t attempt);
  std::int32_t tensor_parallel_size() const { return config_.tensor_parallel_size; }

  // Faults. crash(): every request inside fails (mid-stream once it streamed), then the pod
  // answers connections as `after` says.
  void crash(PodHealth after);
  // The process comes back and loads its model for `load_time`, refusing until it is ready.
  // `keeps_run_alive`: a fault's restart is part of the run (its recovery is measured); a pod an
  // autoscaler adds is not, and must not hold a finished run open while it loads.
  void restart(TimeNs load_time, bool keeps_run_alive = true);
  void set_slowdown(double factor) { slowdown_ = factor; }
  // The pod's KV-transfer network (its NICs to the other pods) is down: a prompt read to or from
  // it fails (fault kv_transfer_failure).
  void set_kv_link_down(bool down) { kv_link_down_ = down; }
  bool kv_link_down() const { return kv_link_down_; }
  // The pod's KV-transfer network runs `factor` times slower (fault kv_transfer_slow): a prompt
  // read to or from it takes that much longer, the slower end setting the pace.
  void set_kv_link_slowdown(double factor) { kv_link_slowdown_ = factor; }
  double kv_link_slowdown() const { return kv_link_slowdown_; }
  // Graceful shutdown (SIGTERM to the server): new connections are refused, the requests it
  // holds run to their end, then the process exits (health kRefusing) and `on_stopped` runs.
  void drain(std::function<void()> on_stopped);

  PodHealth health() const { return health_; }
  bool ready() const { return health_ == PodHealth::kUp; }
  int index() const { return index_; }
  const std::string& name() const { return name_; }
  const Engine& engine() const { return *engine_; }
  // vLLM's counters over the whole run: a restarted process starts from zero, as a scraper
  // sees it, so the counters of earlier processes are added.
  EngineCounters counters() const;

 private:
  void enqueue(RequestPtr r, std::uint64_t epoch);
  void start_step();
  // The engine's next step, its admissions and failures told to whoever listens.
  StepPlan plan_next();
  // Nothing to run: idle until work arrives or a load from host memory ends.
  void go_idle(const StepPlan& empty_plan);
  // Whether the pod may plan another step now: none under way, or on a pipeline-parallel pod
  // fewer than its stages.
  bool can_plan() const;
  // A pipeline-parallel pod: plans microbatches while its batch queue has room.
  void start_microbatches();
  void end_microbatch();
  // A step's results: its tokens out, its finished requests answered.
  void finish(const StepPlan& plan, TimeNs start);
  // Plans a step when the pod is idle, answering and has work (freed blocks may admit some).
  void wake();
  // A step of `dt` solo on a GPU shared with co-located pods: its GPU part runs at the share
  // its neighbours leave it.
  void start_shared_step(TimeNs dt);
  // Starts reading `s`'s prompt from its prefill pod over the network.
  void start_kv_read(const Sequence& s);
  // Carries out the aborts asked for during the step.
  void apply_aborts();
  void end_step();
  // A draining pod with nothing left exits.
  void stop_if_drained();
  // The request waiting for `leg`'s prefill (same id and attempt), removed; null when none is.
  RequestPtr take_awaiting_prefill(const Request& leg);
  // Tells whoever asked for a drain that the process exited, once: drained, or cut short by a
  // crash (the grace period's end, a fault).
  void notify_stopped();

  int index_;
  std::string name_;
  EventLoop& loop_;
  PodConfig config_;
  std::shared_ptr<const CostModel> cost_;
  PodListener* listener_ = nullptr;
  FleetObserver& observer_;
  std::shared_ptr<GpuShare> share_;
  std::unique_ptr<Engine> engine_;
  EngineCounters retired_;  // counters of processes that crashed
  StepPlan current_;
  EventId step_event_;
  // Microbatches under way on a pipeline-parallel pod, oldest first: each ends in turn.
  struct Microbatch {
    StepPlan plan;
    TimeNs start = 0;
    EventId end;
  };
  std::deque<Microbatch> pipeline_;
  PipelineStages stages_;
  TimeNs step_start_ = 0;
  GpuShare::JobId gpu_job_ = 0;  // the running step's GPU work on a shared GPU, until served
  KvNetwork* kv_network_ = nullptr;
  std::vector<std::pair<RequestPtr, KvNetwork::ReadId>> kv_reads_;  // reads under way
  std::vector<std::pair<std::int64_t, std::int32_t>> aborts_;  // (id, attempt) at the step's end
  bool busy_ = false;
  PodHealth health_ = PodHealth::kUp;
  double slowdown_ = 1.0;
  bool kv_link_down_ = false;
  double kv_link_slowdown_ = 1.0;
  // Bumped by every crash, so work scheduled before it (API stage, a step) is dropped.
  std::uint64_t epoch_ = 0;
  // Requests past the API stage that already streamed their first token.
  std::vector<std::int64_t> streamed_;
  bool publish_events_ = false;
  std::vector<KvEvent> events_;
  // Received, not yet handed to the engine: (id, attempt), and whether the gateway has given up
  // on it meanwhile (then it never reaches the engine).
  struct InApi {
    std::int64_t id;
    std::int32_t attempt;
    bool aborted;
  };
  std::vector<InApi> in_api_stage_;
  // When each API-server process is done with the requests it has been given.
  std::vector<TimeNs> api_free_at_;
  // Requests whose prompt a prefill pod is computing, by id (the sidecar holds them).
  std::map<std::int64_t, RequestPtr> awaiting_prefill_;
  std::function<void()> on_stopped_;
};

}  // namespace fleetsim
