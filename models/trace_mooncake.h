// Reader of Mooncake's JSONL traces (kvcache-ai/Mooncake : FAST25-release/README.md, "Trace
// Format"): one request per line, {timestamp (ms from the start), input_length, output_length,
// hash_ids}. hash_ids holds one id per 512-token block, and an id stands for the block *and its
// whole prefix*, so two requests share KV exactly over their equal leading ids.
#pragma once

#include <cstdint>
#include <string>

#include "models/trace_common.h"

namespace fleetsim {

struct MooncakeOptions : TraceReadOptions {
  std::int32_t block_tokens = 512;  // tokens per hash id (Mooncake's block size)
};

// Each request's prompt is one Segment per hash id: full blocks of block_tokens, the last one
// input_length - block_tokens x (n - 1) long, with a content id derived from the hash id. So
// requests with equal leading ids have equal leading tokens, and the engine's own (16-token)
// block hashes match exactly there. A line with fewer ids than ceil(input_length / block_tokens)
// gets the uncovered tail as content of its own; more ids than that is an error.
Trace read_mooncake_trace(const std::string& path, const MooncakeOptions& options = {});

}  // namespace fleetsim
