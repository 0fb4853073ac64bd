// Open-loop chat sessions: users arrive by an arrival process (Poisson, gamma with a chosen
// burstiness, evenly spaced; a constant rate or a schedule such as a daily curve) whatever the
// fleet's state, and each runs a closed-loop conversation: a turn is sent a think time after the
// previous answer, with the whole history resent, for a number of turns drawn per session. A
// slow fleet slows each session down but not the arrival of new ones, so sessions pile up the
// way a real service's users do, where a closed-loop client (multi_turn_chat) would back off.
// This is the shape of BLIS's multi-turn clients (inference-sim docs/reference/workload-spec.md:
// sessions from the client's arrival process, multi_turn.max_rounds, think_time_us,
// context_growth: accumulate), with the rounds drawn from a distribution.
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

// Most turns one session may take: far beyond a chat, low enough that a typo cannot grow one
// history without end.
constexpr double kMaxTurns = 100'000;

struct Session {
  std::unique_ptr<Conversation> conversation;
  std::int32_t turns = 0;
  std::string tier, slo_class;
};

class ChatSessions : public Workload {
 public:
  ChatSessions(const Params& p, const WorkloadContext& ctx)
      : ctx_(ctx),
        arrivals_(arrival_process_from(p)),
        max_sessions_(p.get_int("max_sessions")),
        duration_s_(p.get_double("duration_s")),
        turns_(p.get_distribution_ptr("turns")),
        think_(p.get_distribution_ptr("think_time_ms")),
        shape_(conversation_shape_from(p)),
        tenants_(CategoricalMix::parse(p.get_string("tenants"), "workload.tenants")),
        tiers_(CategoricalMix::parse(p.get_string("tier_mix"), "workload.tier_mix")),
        slo_classes_(
            CategoricalMix::parse(p.get_string("slo_class_mix"), "workload.slo_class_mix")),
        stop_on_error_(p.get_bool("stop_session_on_error")),
        warmup_(sec_to_ns(p.get_double("warmup_s"))),
        arrival_rng_(make_rng(ctx.seed, "workload/session-arrivals")),
        think_rng_(make_rng(ctx.seed, "workload/think")) {
    if (max_sessions_ == 0 && duration_s_ == 0) {
      throw ScenarioError(
          "workload: chat_sessions needs max_sessions or duration_s (with both 0 sessions never "
          "stop arriving)");
    }
    require_range(*turns_, "workload.turns", 1, kMaxTurns, "turns per session");
    require_range(*think_, "workload.think_time_ms", 0, kMaxDelayMs, "milliseconds");
  }

  void start() override { schedule_after(0.0); }

  std::optional<double> expected_requests(double horizon_s) const override {
    return expected_open_loop_requests(arrivals_, turns_->mean(), max_sessions_, duration_s_,
                                       horizon_s);
  }

  void on_complete(const Request& r, Outcome outcome) override {
    const auto it = active_.find(r.conversation);
    if (it == active_.end()) return;
    Session& s = it->second;
    s.conversation->complete_turn();
    if (s.conversation->next_turn() > s.turns || (stop_on_error_ && outcome != Outcome::kOk)) {
      active_.erase(it);
      return;
    }
    const TimeNs think = ms_to_ns(std::max(0.0, think_->sample(think_rng_)));
    ctx_.loop->schedule_in(think, [this, id = r.conversation] { send_turn(id); });
  }

 private:
  void schedule_after(double now_s) {
    const std::optional<double> t = arrivals_.next(now_s, arrival_rng_);
    if (!t || (duration_s_ > 0 && *t >= duration_s_)) return;
    ctx_.loop->schedule_at(sec_to_ns(*t), [this, at = *t] { start_session(at); });
  }

  void start_session(double at_s) {
    const std::int64_t id = started_++;
    // Each session draws from streams of its own, so what it is does not depend on timing.
    Rng rng = make_rng(ctx_.seed, "workload/session/" + std::to_string(id));
    Session s;
    const std::string tenant = tenants_.empty() ? "" : tenants_.sample(rng);
    if (!tiers_.empty()) s.tier = tiers_.sample(rng);
    if (!slo_classes_.empty()) s.slo_class = slo_classes_.sample(rng);
    s.turns = sample_int(*turns_, rng, 1, static_cast<std::int32_t>(kMaxTurns));
    s.conversation = std::make_unique<Conversation>(id, shape_, ctx_.seed, tenant);
    active_.emplace(id, std::move(s));
    send_turn(id);
    if (max_sessions_ == 0 || started_ < max_sessions_) schedule_after(at_s);
  }

  void send_turn(std::int64_t id) {
    const Session& s = active_.at(id);
    Request r = s.conversation->make_turn_request();
    r.connection = id;  // a user's own keep-alive connection
    r.tier = s.tier;
    r.slo_class = s.slo_class;
    r.measured = ctx_.loop->now() >= warmup_;
    ctx_.submit(std::move(r));
  }

  WorkloadContext ctx_;
  ArrivalProcess arrivals_;
  std::int64_t max_sessions_;
  double duration_s_;
  DistributionPtr turns_;
  DistributionPtr think_;
  ConversationShape shape_;
  CategoricalMix tenants_, tiers_, slo_classes_;
  bool stop_on_error_;
  TimeNs warmup_;
  Rng arrival_rng_;
  Rng think_rng_;  // one stream for every session: the order of the draws is the event order
  std::int64_t started_ = 0;
  std::map<std::int64_t, Session> active_;
};

ParamSpec sessions_spec() {
  ParamSpec spec;
  add_arrival_params(spec, 1.0, "sessions");
  spec.integer("max_sessions", 200, "sessions in all (0 = no cap; then duration_s ends them)", 0)
      .real("duration_s", 0, "no session starts after this time (0 = none)", 0)
      .distribution("turns", constant_distribution(4),
                    "turns of each session, drawn when it starts (BLIS's max_rounds)")
      .distribution("think_time_ms", constant_distribution(2000),
                    "a user's delay between an answer and the next question")
      .text("tenants", "",
            "per-tenant mix 'name:weight, ...': each session belongs to a tenant drawn by "
            "weight; with shared_system_prompt, each tenant has its own shared prompt; empty = "
            "one anonymous tenant")
      .text("tier_mix", "",
            "tier hint of each session (every turn carries it), drawn from 'name:weight, ...'; "
            "empty = no hint")
      .text("slo_class_mix", "",
            "SLO class of each session (every turn carries it), drawn from 'name:weight, ...' "
            "for the scenario's slo.classes; empty = no class")
      .boolean("stop_session_on_error", false,
               "a session whose turn failed ends there (else it goes on)")
      .real("warmup_s", 0,
            "requests sent before this time are warm-up: they load the fleet but the summary "
            "leaves them out",
            0);
  return add_conversation_shape_params(spec, {.system_prompt_tokens = 1000,
                                              .question_tokens = 100,
                                              .answer_tokens = 200,
                                              .template_tokens_per_turn = 10});
}

const WorkloadRegistrar kRegistrar(
    "chat_sessions",
    "open-loop chat sessions: users arrive by a process (Poisson, gamma, schedule), each session "
    "closed-loop over its turns with think time, history resent",
    sessions_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<ChatSessions>(p, ctx);
    });

}  // namespace
}  // namespace fleetsim
