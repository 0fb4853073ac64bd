#include "models/trace_mooncake.h"

#include <nlohmann/json.hpp>

#include "models/conversation.h"

namespace fleetsim {

Trace read_mooncake_trace(const std::string& path, const MooncakeOptions& options) {
  Trace trace;
  double previous_ms = 0;
  const std::int64_t block = options.block_tokens;
  read_trace_lines(path, options, trace, [&](std::int64_t line_no, std::string_view text) {
    const nlohmann::json j = parse_json_line(text);
    const double ts = json_timestamp_ms(j, "timestamp");
    const std::int64_t input = json_tokens(j, "input_length", 1);
    const std::int64_t output = json_tokens(j, "output_length", 1);
    const nlohmann::json& ids = json_field(j, "hash_ids");
    if (!ids.is_array()) {
      throw TraceLineError("hash_ids",
                           std::string("expected a list of ids, got ") + ids.type_name());
    }
    const std::int64_t max_ids = (input + block - 1) / block;
    if (static_cast<std::int64_t>(ids.size()) > max_ids) {
      throw TraceLineError("hash_ids", std::to_string(ids.size()) + " ids for input_length " +
                                           std::to_string(input) + " (at most " +
                                           std::to_string(max_ids) + " blocks of " +
                                           std::to_string(block) + ")");
    }
    Request r;
    r.prompt.reserve(ids.size() + 1);
    std::int64_t covered = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const std::uint64_t id = json_uint64(ids[i], "hash_ids[" + std::to_string(i) + "]");
      const std::int64_t tokens = std::min(block, input - covered);
      r.prompt.push_back(
          Segment{content_id(kMooncakeBlockContent, id, 0), static_cast<std::int32_t>(tokens)});
      covered += tokens;
    }
    const auto line = static_cast<std::uint64_t>(line_no);
    if (covered < input) {
      r.prompt.push_back(Segment{content_id(kTracePromptContent, line, 0),
                                 static_cast<std::int32_t>(input - covered)});
    }
    check_monotonic(ts, previous_ms, "timestamp");
    r.prompt_tokens = static_cast<std::int32_t>(input);
    r.output_tokens = static_cast<std::int32_t>(output);
    r.output_content_id = content_id(kTraceOutputContent, line, 0);
    r.arrival = ms_to_ns(ts);
    keep_in_window(trace, options, std::move(r));
  });
  return trace;
}

}  // namespace fleetsim
