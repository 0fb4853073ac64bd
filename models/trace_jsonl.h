// fleetsim's own trace format (docs/traces.md): JSONL, one request per line, with its content as
// segments, so a replay reproduces the prefix sharing of the run that wrote it exactly.
//
//   {"timestamp_ms": 1250.5, "conversation": 3, "turn": 2, "session": "conv-3",
//    "prompt": [{"id": 1234, "tokens": 2000}, {"id": 99, "tokens": 120}],
//    "output_tokens": 40, "output_id": 77, "tier": "big", "slo_class": "interactive"}
//
// Required: timestamp_ms, output_tokens, and prompt (segments) or prompt_tokens (unique content).
#pragma once

#include <ostream>
#include <span>
#include <string>

#include "models/trace_common.h"

namespace fleetsim {

Trace read_trace_jsonl(const std::string& path, const TraceReadOptions& options = {});

// Writes requests (arrival = offset in ns) in the format above; fields at their defaults are left
// out. read_trace_jsonl of the output gives back the same requests. Throws TraceError when the
// file cannot be written.
void write_trace_jsonl(const std::string& path, std::span<const Request> requests);
void write_trace_jsonl(std::ostream& out, std::span<const Request> requests);

}  // namespace fleetsim
