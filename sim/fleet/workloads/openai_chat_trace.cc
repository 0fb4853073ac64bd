// Replays OpenAI chat-completions requests (models/trace_openai.h): token counts estimated from
// characters, each distinct message one content segment, so resent histories share KV blocks.
#include <memory>

#include "models/trace_openai.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

ParamSpec openai_spec() {
  ParamSpec spec = trace_replay_spec(
      "JSONL of chat-completions request bodies {messages, max_tokens?, timestamp? (ms)}");
  spec.real("chars_per_token", 4.0, "characters per token when estimating message lengths", 0.1,
            100)
      .integer("default_max_tokens", 256, "output tokens of a request without max_tokens", 1)
      .real("interval_ms", 100, "gap after the previous request for a line without a timestamp", 0);
  return spec;
}

const WorkloadRegistrar kRegistrar(
    "openai_chat_trace",
    "replay OpenAI chat-completions JSONL (messages, max_tokens, timestamp); ~4 chars a token",
    openai_spec(), [](const Params& p, const WorkloadContext& ctx) -> std::unique_ptr<Workload> {
      OpenAiChatOptions o;
      set_read_options(o, p);
      o.chars_per_token = p.get_double("chars_per_token");
      o.default_max_tokens = static_cast<std::int32_t>(p.get_int("default_max_tokens"));
      o.interval_ms = p.get_double("interval_ms");
      const Trace trace = read_openai_chat_trace(resolve_data_path(p.get_string("file")), o);
      return make_trace_replay(p, ctx, trace);
    });

}  // namespace
}  // namespace fleetsim
