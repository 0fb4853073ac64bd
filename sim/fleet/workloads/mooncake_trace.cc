// Replays a Mooncake JSONL trace (models/trace_mooncake.h): each request at its timestamp, its
// prompt built from the trace's 512-token prefix-block ids so requests share KV where their
// leading ids match.
#include <memory>

#include "models/trace_mooncake.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

ParamSpec mooncake_spec() {
  ParamSpec spec = trace_replay_spec(
      "Mooncake JSONL trace {timestamp, input_length, output_length, hash_ids}, e.g. "
      "mooncake/synthetic_trace.jsonl (in the data folder)");
  spec.integer("block_tokens", 512, "tokens each hash id stands for (Mooncake's block size)", 1,
               1 << 20);
  return spec;
}

const WorkloadRegistrar kRegistrar(
    "mooncake_trace",
    "replay a Mooncake JSONL trace (timestamps, lengths, 512-token prefix-block hash ids)",
    mooncake_spec(), [](const Params& p, const WorkloadContext& ctx) -> std::unique_ptr<Workload> {
      MooncakeOptions o;
      set_read_options(o, p);
      o.block_tokens = static_cast<std::int32_t>(p.get_int("block_tokens"));
      const Trace trace = read_mooncake_trace(resolve_data_path(p.get_string("file")), o);
      return make_trace_replay(p, ctx, trace);
    });

}  // namespace
}  // namespace fleetsim
