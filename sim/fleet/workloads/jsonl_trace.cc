// Replays fleetsim's own JSONL trace format (models/trace_jsonl.h, docs/traces.md): content
// segments, conversations, tier and SLO class exactly as written.
#include <memory>

#include "models/trace_jsonl.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

const WorkloadRegistrar kRegistrar(
    "jsonl_trace",
    "replay fleetsim's JSONL trace format (timestamp_ms, prompt segments, output_tokens, ...)",
    trace_replay_spec("fleetsim JSONL trace (docs/traces.md)"),
    [](const Params& p, const WorkloadContext& ctx) -> std::unique_ptr<Workload> {
      TraceReadOptions o;
      set_read_options(o, p);
      const Trace trace = read_trace_jsonl(resolve_data_path(p.get_string("file")), o);
      return make_trace_replay(p, ctx, trace);
    });

}  // namespace
}  // namespace fleetsim
