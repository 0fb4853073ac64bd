#include "models/trace_jsonl.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/block_hash.h"
#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/output_files.h"

namespace fleetsim {

Trace read_trace_jsonl(const std::string& path, const TraceReadOptions& options) {
  Trace trace;
  double previous_ms = 0;
  read_trace_lines(path, options, trace, [&](std::int64_t line_no, std::string_view text) {
    const nlohmann::json j = parse_json_line(text);
    const auto line = static_cast<std::uint64_t>(line_no);
    Request r;
    const double ts = json_timestamp_ms(j, "timestamp_ms");
    if (json_has(j, "conversation")) r.conversation = json_int(j, "conversation", -1);
    if (json_has(j, "turn")) r.turn = static_cast<std::int32_t>(json_int(j, "turn", 0));
    if (json_has(j, "session")) r.session = json_string(j, "session");
    if (json_has(j, "prompt")) {
      const nlohmann::json& segs = j["prompt"];
      if (!segs.is_array() || segs.empty()) {
        throw TraceLineError("prompt",
                             "expected a non-empty list of {id, tokens}, got " + segs.dump());
      }
      std::int64_t sum = 0;
      for (std::size_t i = 0; i < segs.size(); ++i) {
        const std::string where = "prompt[" + std::to_string(i) + "]";
        if (!segs[i].is_object()) throw TraceLineError(where, "expected {id, tokens}");
        if (!json_has(segs[i], "id")) throw TraceLineError(where + ".id", "missing field");
        const std::uint64_t id = json_uint64(segs[i]["id"], where + ".id");
        std::int64_t tokens = 0;
        try {
          tokens = json_tokens(segs[i], "tokens", 1);
        } catch (const TraceLineError& e) {
          throw TraceLineError(where + ".tokens", e.what());
        }
        r.prompt.push_back(Segment{id, static_cast<std::int32_t>(tokens)});
        sum += tokens;
        if (sum > static_cast<std::int64_t>(kMaxTokens)) {
          throw TraceLineError("prompt", "the segments hold more than " +
                                             std::to_string(static_cast<std::int64_t>(kMaxTokens)) +
                                             " tokens");
        }
      }
      r.prompt_tokens = total_tokens(r.prompt);
      if (json_has(j, "prompt_tokens") && json_tokens(j, "prompt_tokens", 1) != r.prompt_tokens) {
        throw TraceLineError("prompt_tokens", "is " + j["prompt_tokens"].dump() +
                                                  " but the prompt's segments hold " +
                                                  std::to_string(r.prompt_tokens) + " tokens");
      }
    } else {
      if (!json_has(j, "prompt_tokens")) {
        throw TraceLineError("prompt", "missing field (give prompt segments or prompt_tokens)");
      }
      r.prompt_tokens = static_cast<std::int32_t>(json_tokens(j, "prompt_tokens", 1));
      r.prompt = {Segment{content_id(kTracePromptContent, line, 0), r.prompt_tokens}};
    }
    r.output_tokens = static_cast<std::int32_t>(json_tokens(j, "output_tokens", 1));
    r.output_content_id = json_has(j, "output_id") ? json_uint64(j["output_id"], "output_id")
                                                   : content_id(kTraceOutputContent, line, 0);
    if (json_has(j, "tier")) r.tier = json_string(j, "tier");
    if (json_has(j, "slo_class")) r.slo_class = json_string(j, "slo_class");
    if (json_has(j, "measured")) {
      if (!j["measured"].is_boolean()) {
        throw TraceLineError("measured", "expected true or false, got " + j["measured"].dump());
      }
      r.measured = j["measured"].get<bool>();
    }
    check_monotonic(ts, previous_ms, "timestamp_ms");
    r.arrival = ms_to_ns(ts);
    keep_in_window(trace, options, std::move(r));
  });
  return trace;
}

void write_trace_jsonl(std::ostream& out, std::span<const Request> requests) {
  for (const Request& r : requests) {
    nlohmann::json j;
    // Exact: ns / 1e6 as a double prints with enough digits for llround(ms x 1e6) to give the
    // same ns back (below 2^53 ns, about 104 days).
    j["timestamp_ms"] = static_cast<double>(r.arrival) / 1e6;
    if (r.conversation >= 0) j["conversation"] = r.conversation;
    if (r.turn != 0) j["turn"] = r.turn;
    if (!r.session.empty()) j["session"] = r.session;
    nlohmann::json segs = nlohmann::json::array();
    for (const Segment& s : r.prompt) segs.push_back({{"id", s.content_id}, {"tokens", s.tokens}});
    j["prompt"] = std::move(segs);
    j["prompt_tokens"] = r.prompt_tokens;
    j["output_tokens"] = r.output_tokens;
    j["output_id"] = r.output_content_id;
    if (!r.tier.empty()) j["tier"] = r.tier;
    if (!r.slo_class.empty()) j["slo_class"] = r.slo_class;
    if (!r.measured) j["measured"] = false;
    out << j.dump() << '\n';
  }
}

void write_trace_jsonl(const std::string& path, std::span<const Request> requests) {
  std::ostringstream out;
  write_trace_jsonl(out, requests);
  try {
    write_output_file(path, out.str());
  } catch (const std::filesystem::filesystem_error& e) {
    throw TraceError(path + ": cannot write the trace file: " + e.code().message());
  }
}

}  // namespace fleetsim
