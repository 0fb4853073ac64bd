// Replays a BurstGPT trace (models/trace_burstgpt.h): the arrival times and lengths of ChatGPT
// and GPT-4 requests to an Azure OpenAI service, optionally one model's or one log type's.
#include <memory>

#include "models/trace_burstgpt.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

ParamSpec burstgpt_spec() {
  ParamSpec spec = trace_replay_spec(
      "BurstGPT CSV (Timestamp, Model, Request tokens, Response tokens, Total tokens, Log Type), "
      "e.g. BurstGPT_without_fails_1.csv from github.com/HPMLL/BurstGPT");
  spec.text("model", "", "replay only rows of this Model, e.g. ChatGPT or GPT-4 (empty = all)")
      .text("log_type", "",
            "replay only rows of this Log Type, e.g. 'Conversation log' or 'API log' (empty = all)")
      .text("failed_rows", "skip",
            "rows with 0 response tokens (requests that failed): 'skip' leaves them out, as the "
            "trace's _without_fails files do; 'error' stops at the first one",
            {"skip", "error"});
  return spec;
}

const WorkloadRegistrar kRegistrar(
    "burstgpt_trace",
    "replay a BurstGPT CSV trace (ChatGPT / GPT-4 arrivals and lengths; no content sharing)",
    burstgpt_spec(), [](const Params& p, const WorkloadContext& ctx) -> std::unique_ptr<Workload> {
      BurstGptOptions o;
      set_read_options(o, p);
      o.model = p.get_string("model");
      o.log_type = p.get_string("log_type");
      o.failed_is_error = p.get_string("failed_rows") == "error";
      const Trace trace = read_burstgpt_trace(resolve_data_path(p.get_string("file")), o);
      if (trace.requests.empty() && (!o.model.empty() || !o.log_type.empty())) {
        throw ScenarioError("workload.model/log_type: no row of " + trace.path + " with model '" +
                            o.model + "' and log type '" + o.log_type +
                            "' (empty = any) in the window start_s/end_s");
      }
      return make_trace_replay(p, ctx, trace);
    });

}  // namespace
}  // namespace fleetsim
