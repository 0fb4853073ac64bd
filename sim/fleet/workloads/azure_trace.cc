// Replays an Azure LLM inference trace (models/trace_azure.h): the real arrival times and
// lengths of an Azure service; every prompt is content of its own.
#include <memory>

#include "models/trace_azure.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

const WorkloadRegistrar kRegistrar(
    "azure_trace",
    "replay an Azure LLM inference CSV trace (TIMESTAMP, ContextTokens, GeneratedTokens)",
    trace_replay_spec("Azure CSV trace, e.g. "
                      "azure2023/AzureLLMInferenceTrace_conv.csv (in the data folder)"),
    [](const Params& p, const WorkloadContext& ctx) -> std::unique_ptr<Workload> {
      TraceReadOptions o;
      set_read_options(o, p);
      const Trace trace = read_azure_trace(resolve_data_path(p.get_string("file")), o);
      return make_trace_replay(p, ctx, trace);
    });

}  // namespace
}  // namespace fleetsim
