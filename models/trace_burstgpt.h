// Reader of the BurstGPT traces (HPMLL/BurstGPT : README.md and data/BurstGPT_*.csv; Wang et al.,
// arXiv:2401.17644): ChatGPT and GPT-4 requests to an Azure OpenAI service over months, as CSV
// with a header naming Timestamp (seconds from the trace's start), Model ("ChatGPT", "GPT-4"),
// Request tokens, Response tokens, Total tokens and Log Type ("Conversation log", "API log").
// The files with failures mark a failed request with 0 response tokens. The trace has no content,
// so every prompt is content of its own; a SessionID column, which the README announces, becomes
// the request's session when present.
#pragma once

#include <string>

#include "models/trace_common.h"

namespace fleetsim {

struct BurstGptOptions : TraceReadOptions {
  std::string model;             // keep only rows of this Model ("" = every model)
  std::string log_type;          // keep only rows of this Log Type ("" = every type)
  bool failed_is_error = false;  // a row with 0 response tokens: an error, or left out (default)
};

// Rows left out by the filters, and failed rows, count in Trace::left_out.
Trace read_burstgpt_trace(const std::string& path, const BurstGptOptions& options = {});

}  // namespace fleetsim
