// Agent sessions: an agent loop calls the model, runs the tool it asked for, and calls the model
// again with the tool's output appended, so each session's context grows step by step by the
// model's action and the tool's result (SWE-agent- or ReAct-style loops). Closed loop: a step is
// sent when the previous one completed and its tool ran. Agents usually share one long system
// prompt (instructions and tool definitions), so sessions share a prefix; each session's history
// is its own and is resent whole, so a pod that keeps the session hits its whole context.
#include <map>
#include <memory>
#include <vector>

#include "models/block_hash.h"
#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

constexpr std::uint64_t kSystem = 121;
constexpr std::uint64_t kTask = 122;
constexpr std::uint64_t kAction = 123;
constexpr std::uint64_t kToolOutput = 124;
constexpr std::uint64_t kShared = ~0ULL;
// Most model calls one session may take: far beyond any agent run, and low enough that a typo
// cannot grow one session's history without end.
constexpr std::int32_t kMaxSteps = 1'000'000;

struct Session {
  std::int64_t id = 0;
  std::int32_t steps = 0;  // steps this session will take
  std::int32_t step = 0;   // steps sent so far
  std::vector<Segment> history;
  Segment pending_action{};
  Rng rng;
};

class AgentSessions : public Workload {
 public:
  AgentSessions(const Params& p, const WorkloadContext& ctx)
      : ctx_(ctx),
        sessions_(p.get_int("sessions")),
        concurrency_(p.get_int("concurrency")),
        max_context_(static_cast<std::int32_t>(p.get_int("max_context_tokens"))),
        shared_system_(p.get_bool("shared_system_prompt")),
        system_(dist(p, "system_prompt_tokens")),
        task_(dist(p, "task_tokens")),
        steps_(dist(p, "steps")),
        action_(dist(p, "action_tokens")),
        tool_output_(dist(p, "tool_output_tokens")),
        tool_latency_(dist(p, "tool_latency_ms")),
        tool_rng_(make_rng(ctx.seed, "workload/tool-latency")),
        tagger_(p, ctx.seed) {
    // The context may lack a system prompt or a task, but every call generates a token and
    // every tool returns one.
    require_tokens(*system_, "workload.system_prompt_tokens", 0);
    require_tokens(*task_, "workload.task_tokens", 0);
    require_range(*steps_, "workload.steps", 1, kMaxSteps, "model calls per session");
    require_tokens(*action_, "workload.action_tokens", 1);
    require_tokens(*tool_output_, "workload.tool_output_tokens", 1);
    require_range(*tool_latency_, "workload.tool_latency_ms", 0, kMaxDelayMs, "milliseconds");
    Rng shared = make_rng(ctx.seed, "workload/agent-shared-system");
    shared_system_tokens_ = sample_tokens(*system_, shared, 0);
  }

  void start() override {
    const std::int64_t first = std::min(concurrency_, sessions_);
    for (std::int64_t i = 0; i < first; ++i) start_next_session();
  }

  void on_complete(const Request& r, Outcome) override {
    auto it = active_.find(r.conversation);
    if (it == active_.end()) return;
    Session& s = *it->second;
    s.history.push_back(s.pending_action);
    if (s.step >= s.steps) {
      // The final answer: no tool runs, the next session takes the slot.
      end_session(it);
      return;
    }
    // The tool runs, then its output joins the context and the agent calls the model again.
    const TimeNs latency = ms_to_ns(std::max(0.0, tool_latency_->sample(tool_rng_)));
    const std::int64_t id = s.id;
    ctx_.loop->schedule_in(latency, [this, id] { send_step(id); });
  }

 private:
  static DistributionPtr dist(const Params& p, const char* name) {
    return p.get_distribution_ptr(name);
  }

  void start_next_session() {
    if (next_session_ >= sessions_) return;
    const std::int64_t id = next_session_++;
    auto s = std::make_unique<Session>();
    s->id = id;
    s->rng = make_rng(ctx_.seed, "agent-session/" + std::to_string(id));
    s->steps = sample_int(*steps_, s->rng, 1, kMaxSteps);
    const auto sid = static_cast<std::uint64_t>(id);
    const std::int32_t sys =
        shared_system_ ? shared_system_tokens_ : sample_tokens(*system_, s->rng, 0);
    if (sys > 0) {
      s->history.push_back(Segment{content_id(kSystem, shared_system_ ? kShared : sid, 0), sys});
    }
    const std::int32_t task = sample_tokens(*task_, s->rng, 0);
    if (task > 0) s->history.push_back(Segment{content_id(kTask, sid, 0), task});
    active_.emplace(id, std::move(s));
    send_step(id);
  }

  void end_session(std::map<std::int64_t, std::unique_ptr<Session>>::iterator it) {
    active_.erase(it);
    start_next_session();
  }

  void send_step(std::int64_t id) {
    auto it = active_.find(id);
    Session& s = *it->second;
    const auto sid = static_cast<std::uint64_t>(id);
    if (s.step > 0) {
      // The tool's output of the previous step joins the context.
      const auto step = static_cast<std::uint64_t>(s.step);
      s.history.push_back(
          Segment{content_id(kToolOutput, sid, step), sample_tokens(*tool_output_, s.rng)});
    }
    const std::int32_t action = sample_tokens(*action_, s.rng);
    // A context that would outgrow the model's window ends the session (an agent framework
    // stops or summarizes there); the first call is always sent.
    if (s.step > 0 && max_context_ > 0 && total_tokens(s.history) + action > max_context_) {
      end_session(it);
      return;
    }
    ++s.step;
    s.pending_action =
        Segment{content_id(kAction, sid, static_cast<std::uint64_t>(s.step)), action};
    Request r;
    r.conversation = id;
    r.turn = s.step;
    r.session = "agent-" + std::to_string(id);
    r.connection = id;  // each session its own keep-alive connection
    r.prompt = s.history;
    r.prompt_tokens = total_tokens(s.history);
    r.output_tokens = action;
    r.output_content_id = s.pending_action.content_id;
    tagger_.tag(r, ctx_.loop->now());
    ctx_.submit(std::move(r));
  }

  WorkloadContext ctx_;
  std::int64_t sessions_;
  std::int64_t concurrency_;
  std::int32_t max_context_;
  bool shared_system_;
  DistributionPtr system_, task_, steps_, action_, tool_output_, tool_latency_;
  Rng tool_rng_;
  RequestTagger tagger_;
  std::int32_t shared_system_tokens_ = 0;
  std::int64_t next_session_ = 0;
  std::map<std::int64_t, std::unique_ptr<Session>> active_;
};

ParamSpec agent_spec() {
  ParamSpec spec;
  spec.integer("sessions", 32, "agent sessions in all", 1)
      .integer("concurrency", 8, "sessions in flight at once", 1, kMaxClients)
      .distribution("system_prompt_tokens", constant_distribution(3000),
                    "instructions and tool definitions at the head of every call")
      .boolean("shared_system_prompt", true,
               "one system prompt for all sessions (the same agent); false = one per session")
      .distribution("task_tokens", constant_distribution(300), "the user's task, once per session")
      .distribution("steps", constant_distribution(10), "model calls per session")
      .distribution("action_tokens", constant_distribution(100),
                    "tokens the model generates per call (a tool call or the final answer)")
      .distribution("tool_output_tokens", constant_distribution(800),
                    "tokens of each tool result appended to the context")
      .distribution("tool_latency_ms", constant_distribution(500),
                    "time a tool runs between a model call's end and the next call")
      .integer("max_context_tokens", 131072,
               "a session ends when its context would exceed this (the model's window; 0 = none)",
               0);
  return add_tag_params(spec);
}

const WorkloadRegistrar kRegistrar(
    "agent_sessions",
    "closed-loop agent sessions whose context grows by each call's action and tool output",
    agent_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<AgentSessions>(p, ctx);
    });

}  // namespace
}  // namespace fleetsim
