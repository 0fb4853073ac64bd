// A closed-loop multi-turn chat client, like a sequential chat benchmark (kvbench): N
// conversations of T turns over C clients, each with one request in flight; turn t+1 is sent
// only after turn t completes, with the whole history resent. A client holds up to K
// conversations and alternates between them, as vLLM's benchmarks/multi_turn client does
// (benchmark_serving_multi_turn.py: --num-clients, --max-active-conversations, and
// --conversation-sampling round_robin or random); with K = 1 it runs each to its end. A client
// whose conversation ends takes the next one not yet started.
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/fleet/workload.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

class ChatClient : public Workload {
 public:
  ChatClient(const Params& p, const WorkloadContext& ctx)
      : ctx_(ctx),
        conversations_(p.get_int("conversations")),
        turns_(static_cast<std::int32_t>(p.get_int("turns"))),
        concurrency_(p.get_int("concurrency")),
        ramp_up_(ms_to_ns(p.get_double("ramp_up_ms"))),
        think_rng_(make_rng(ctx.seed, "workload/think")),
        pick_rng_(make_rng(ctx.seed, "workload/pick")),
        stop_on_error_(p.get_bool("stop_conversation_on_error")),
        active_per_client_(p.get_int("active_per_client")),
        random_sampling_(p.get_string("conversation_sampling") == "random") {
    shape_ = conversation_shape_from(p);
    think_ = p.get_distribution_ptr("think_time_ms");
    require_range(*think_, "workload.think_time_ms", 0, kMaxDelayMs, "milliseconds");
    tenants_ = CategoricalMix::parse(p.get_string("tenants"), "workload.tenants");
    tiers_ = CategoricalMix::parse(p.get_string("tier_mix"), "workload.tier_mix");
    slo_classes_ = CategoricalMix::parse(p.get_string("slo_class_mix"), "workload.slo_class_mix");
  }

  void start() override {
    const std::int64_t first = std::min(concurrency_, conversations_);
    rotations_.resize(static_cast<std::size_t>(first));
    for (std::int64_t i = 0; i < first; ++i) {
      // Clients start spread evenly over the ramp-up, as benchmark harnesses stagger them.
      const TimeNs at = first > 1 ? ramp_up_ * i / first : 0;
      ctx_.loop->schedule_at(at, [this, i] { next_request(i); });
    }
  }

  // Every conversation's every turn (fewer when errors end conversations early); how many a
  // horizon leaves depends on the run, so none is told then.
  std::optional<double> expected_requests(double horizon_s) const override {
    if (horizon_s > 0) return std::nullopt;
    return static_cast<double>(conversations_) * turns_;
  }

  void on_complete(const Request& r, Outcome outcome) override {
    auto it = active_.find(r.conversation);
    if (it == active_.end()) return;
    Conversation& conv = *it->second.conversation;
    const std::int64_t client = it->second.client;
    conv.complete_turn();
    const bool ended = conv.next_turn() > turns_ || (stop_on_error_ && outcome != Outcome::kOk);
    if (ended) {
      active_.erase(it);
      tags_.erase(r.conversation);
      next_request(client);
      return;
    }
    // Back of the client's rotation, as the vLLM client's appendleft.
    rotations_[static_cast<std::size_t>(client)].push_front(r.conversation);
    const TimeNs think = ms_to_ns(std::max(0.0, think_->sample(think_rng_)));
    ctx_.loop->schedule_in(think, [this, client] { next_request(client); });
  }

 private:
  void next_request(std::int64_t client_index) {
    std::deque<std::int64_t>& rotation = rotations_[static_cast<std::size_t>(client_index)];
    while (static_cast<std::int64_t>(rotation.size()) < active_per_client_ &&
           next_conversation_ < conversations_) {
      rotation.push_back(start_conversation(client_index));
    }
    if (rotation.empty()) return;
    std::int64_t id = 0;
    if (random_sampling_) {
      const std::size_t pick =
          std::uniform_int_distribution<std::size_t>(0, rotation.size() - 1)(pick_rng_);
      id = rotation[pick];
      rotation.erase(rotation.begin() + static_cast<std::ptrdiff_t>(pick));
    } else {
      id = rotation.back();
      rotation.pop_back();
    }
    send_turn(id);
  }

  std::int64_t start_conversation(std::int64_t client) {
    const std::int64_t id = next_conversation_++;
    // Each conversation draws its tenant from its own stream: the mix does not depend on timing.
    std::string tenant;
    if (!tenants_.empty()) {
      Rng rng = make_rng(ctx_.seed, "workload/tenant/" + std::to_string(id));
      tenant = tenants_.sample(rng);
    }
    active_.emplace(id,
                    Active{std::make_unique<Conversation>(id, shape_, ctx_.seed, tenant), client});
    // Likewise its tier hint and SLO class: an application asks for one model tier and has one
    // latency objective for the whole chat.
    if (!tiers_.empty()) {
      Rng rng = make_rng(ctx_.seed, "workload/tier/" + std::to_string(id));
      tags_[id].tier = tiers_.sample(rng);
    }
    if (!slo_classes_.empty()) {
      Rng rng = make_rng(ctx_.seed, "workload/slo/" + std::to_string(id));
      tags_[id].slo_class = slo_classes_.sample(rng);
    }
    return id;
  }

  void send_turn(std::int64_t id) {
    const Active& active = active_.at(id);
    Request r = active.conversation->make_turn_request();
    r.connection = active.client;  // one keep-alive connection per client worker
    if (auto it = tags_.find(id); it != tags_.end()) {
      r.tier = it->second.tier;
      r.slo_class = it->second.slo_class;
    }
    ctx_.submit(std::move(r));
  }

  WorkloadContext ctx_;
  std::int64_t conversations_;
  std::int32_t turns_;
  std::int64_t concurrency_;
  TimeNs ramp_up_;
  Rng think_rng_;
  Rng pick_rng_;  // one stream for every client: the order of the draws is the event order
  bool stop_on_error_;
  std::int64_t active_per_client_;
  bool random_sampling_;
  ConversationShape shape_;
  DistributionPtr think_;
  CategoricalMix tenants_;
  CategoricalMix tiers_;
  CategoricalMix slo_classes_;
  struct Tags {
    std::string tier;
    std::string slo_class;
  };
  std::map<std::int64_t, Tags> tags_;  // of each active conversation that has any
  std::int64_t next_conversation_ = 0;
  struct Active {
    std::unique_ptr<Conversation> conversation;
    std::int64_t client;
  };
  std::map<std::int64_t, Active> active_;
  // Each client's open conversations; the next to send is at the back.
  std::vector<std::deque<std::int64_t>> rotations_;
};

ParamSpec chat_spec() {
  ParamSpec spec =
      ParamSpec()
          .integer("conversations", 40, "number of conversations", 1)
          .integer("turns", 15, "turns per conversation", 1)
          .integer("concurrency", 16,
                   "clients, each with one request in flight (with active_per_client 1: "
                   "conversations in flight at once)",
                   1, kMaxClients)
          .integer("active_per_client", 1,
                   "conversations a client holds open and alternates between (vLLM's "
                   "benchmarks/multi_turn: --max-active-conversations / --num-clients); 1 = "
                   "each runs to its end before the client starts the next",
                   1)
          .text("conversation_sampling", "round_robin",
                "which of its open conversations a client sends next: round_robin (each in "
                "turn) or random (uniform), as vLLM's --conversation-sampling",
                {"round_robin", "random"})
          .distribution("think_time_ms", constant_distribution(0),
                        "client delay between a reply and the client's next request")
          .real("ramp_up_ms", 0, "spread the C clients' starts over this time", 0)
          .text("tenants", "",
                "per-tenant mix 'name:weight, ...': each conversation belongs to a tenant drawn "
                "by weight; with shared_system_prompt, each tenant has its own shared prompt "
                "(e.g. 'support:0.6, coding:0.3, legal:0.1'); empty = one anonymous tenant")
          .text("tier_mix", "",
                "tier hint of each conversation (every turn carries it), drawn per conversation "
                "from 'name:weight, ...' (e.g. 'small:0.7, big:0.3') for tier routing; empty = no "
                "hint")
          .text("slo_class_mix", "",
                "SLO class of each conversation (every turn carries it), drawn per conversation "
                "from 'name:weight, ...' (e.g. 'interactive:0.8, batch:0.2'), for the scenario's "
                "slo.classes; empty = no class")
          .boolean("stop_conversation_on_error", false,
                   "abandon a conversation whose turn failed (else it goes on)");
  return add_conversation_shape_params(spec, {.system_prompt_tokens = 2000,
                                              .question_tokens = 100,
                                              .answer_tokens = 100,
                                              .template_tokens_per_turn = 10});
}

const WorkloadRegistrar kRegistrar(
    "multi_turn_chat",
    "closed-loop multi-turn chats: N conversations of T turns, C in flight, history resent",
    chat_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<ChatClient>(p, ctx);
    });

}  // namespace
}  // namespace fleetsim
