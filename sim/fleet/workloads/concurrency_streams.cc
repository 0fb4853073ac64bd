// A fixed number of streams, each sending its next request as soon as the previous one
// completes, like guidellm's "concurrent" profile (vllm-project/guidellm : src/guidellm/
// scheduler/, ConcurrentStrategy): load set by concurrency, not by rate. Requests are synthetic
// single-turn prompts or multi-turn chats (history resent each turn). A warm-up fills the caches
// and queues first; requests that arrive in the measurement window [warmup_s, warmup_s +
// duration_s) are the measured ones, and the streams stop sending when the window closes. What
// is still in flight then either finishes and counts (drain) or is cancelled and left out, with
// rates over the window's length (cancel: guidellm's max-seconds constraint).
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

class ConcurrencyStreams : public Workload {
 public:
  ConcurrencyStreams(const Params& p, const WorkloadContext& ctx)
      : ctx_(ctx),
        streams_(p.get_int("streams")),
        turns_(static_cast<std::int32_t>(p.get_int("turns"))),
        max_requests_(p.get_int("max_requests")),
        warmup_(sec_to_ns(p.get_double("warmup_s"))),
        end_(p.get_double("duration_s") > 0 ? warmup_ + sec_to_ns(p.get_double("duration_s"))
                                            : INT64_MAX),
        ramp_up_(ms_to_ns(p.get_double("ramp_up_ms"))),
        cancel_at_end_(p.get_string("at_window_end") == "cancel"),
        think_(p.get_distribution_ptr("think_time_ms")),
        think_rng_(make_rng(ctx.seed, "workload/think")),
        tagger_(p, ctx.seed) {
    if (max_requests_ == 0 && end_ == INT64_MAX) {
      throw ScenarioError(
          "workload: concurrency_streams needs duration_s or max_requests (with both 0 the "
          "streams never stop)");
    }
    if (cancel_at_end_ && end_ == INT64_MAX) {
      throw ScenarioError(
          "workload.at_window_end: cancel needs a window to end (duration_s > 0); with "
          "duration_s 0 the streams stop only at max_requests");
    }
    shape_ = conversation_shape_from(p);
    require_range(*think_, "workload.think_time_ms", 0, kMaxDelayMs, "milliseconds");
  }

  void start() override {
    for (std::int64_t s = 0; s < streams_; ++s) {
      // Streams may start spread over a ramp-up; guidellm starts them all at once (0).
      const TimeNs at = streams_ > 1 ? ramp_up_ * s / streams_ : 0;
      ctx_.loop->schedule_at(at, [this, s] { new_conversation(s); });
    }
  }

  // The cap, when there is one and no horizon (how many a horizon leaves depends on the run).
  std::optional<double> expected_requests(double horizon_s) const override {
    if (max_requests_ == 0 || horizon_s > 0) return std::nullopt;
    return static_cast<double>(max_requests_);
  }

  void on_complete(const Request& r, Outcome) override {
    auto it = active_.find(r.conversation);
    if (it == active_.end()) return;
    Conversation& conv = *it->second.conversation;
    conv.complete_turn();
    if (conv.next_turn() > turns_) {
      const std::int64_t stream = it->second.stream;
      active_.erase(it);
      after_think([this, stream] { new_conversation(stream); });
      return;
    }
    const std::int64_t id = r.conversation;
    after_think([this, id] { send_turn(id); });
  }

  std::optional<CancelWindow> cancel_window() const override {
    if (!cancel_at_end_) return std::nullopt;
    return CancelWindow{warmup_, end_};
  }

 private:
  template <typename F>
  void after_think(F f) {
    const TimeNs think = ms_to_ns(std::max(0.0, think_->sample(think_rng_)));
    ctx_.loop->schedule_in(think, std::move(f));
  }

  bool may_send() const {
    return ctx_.loop->now() < end_ && (max_requests_ == 0 || sent_ < max_requests_);
  }

  void new_conversation(std::int64_t stream) {
    if (!may_send()) return;
    const std::int64_t id = next_conversation_++;
    active_.emplace(id, Active{std::make_unique<Conversation>(id, shape_, ctx_.seed), stream});
    send_turn(id);
  }

  void send_turn(std::int64_t id) {
    if (!may_send()) {
      active_.erase(id);
      return;
    }
    ++sent_;
    const Active& active = active_.at(id);
    Request r = active.conversation->make_turn_request();
    r.connection = active.stream;  // one keep-alive connection per stream
    tagger_.tag(r, ctx_.loop->now());
    ctx_.submit(std::move(r));
  }

  WorkloadContext ctx_;
  std::int64_t streams_;
  std::int32_t turns_;
  std::int64_t max_requests_;
  TimeNs warmup_;
  TimeNs end_;
  TimeNs ramp_up_;
  bool cancel_at_end_;
  DistributionPtr think_;
  Rng think_rng_;
  RequestTagger tagger_;
  ConversationShape shape_;
  std::int64_t next_conversation_ = 0;
  std::int64_t sent_ = 0;
  struct Active {
    std::unique_ptr<Conversation> conversation;
    std::int64_t stream;  // the stream sending it
  };
  std::map<std::int64_t, Active> active_;
};

ParamSpec streams_spec() {
  ParamSpec spec;
  spec.integer("streams", 16, "concurrent streams, each sending its next request on completion", 1,
               kMaxClients)
      .integer("turns", 1,
               "turns per conversation: 1 = independent single-turn requests; more = multi-turn "
               "chats, the whole history resent each turn",
               1)
      .real("duration_s", 60, "measurement window after the warm-up (0 = until max_requests)", 0)
      .integer("max_requests", 0, "stop after this many requests, warm-up included (0 = no cap)", 0)
      .distribution("think_time_ms", constant_distribution(0),
                    "delay between a completion and the stream's next request")
      .real("ramp_up_ms", 0, "spread the streams' starts over this time (0 = all at once)", 0)
      .text("at_window_end", "drain",
            "what happens to requests in flight when the measurement window closes: drain = "
            "they finish and count, rates over the measured requests' span; cancel = the "
            "client cancels them and leaves them out, rates = completions in the window / its "
            "length (guidellm: a max-seconds constraint cancels in-flight requests as "
            "incomplete, and its request rate counts completions inside the window; "
            "scheduler/worker.py, benchmark/schemas/generative/metrics.py)",
            {"drain", "cancel"});
  add_conversation_shape_params(spec, {.system_prompt_tokens = 0,
                                       .question_tokens = 1000,
                                       .answer_tokens = 200,
                                       .template_tokens_per_turn = 0});
  add_tag_params(spec);
  return spec;
}

const WorkloadRegistrar kRegistrar(
    "concurrency_streams",
    "N streams sending back to back (guidellm concurrent): single- or multi-turn, warm-up, then "
    "a measurement window",
    streams_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<ConcurrencyStreams>(p, ctx);
    });

}  // namespace
}  // namespace fleetsim
