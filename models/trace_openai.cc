#include "models/trace_openai.h"

#include <xxhash.h>

#include <tsl/robin_map.h>
#include <cmath>
#include <nlohmann/json.hpp>

#include "models/block_hash.h"
#include "models/conversation.h"

namespace fleetsim {

std::int64_t utf8_length(std::string_view text) {
  std::int64_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

namespace {

// The text of one message: a string, or the text parts of a list of content parts. A message
// with no content (an assistant's tool calls) is its tool_calls as JSON.
std::string message_text(const nlohmann::json& m, const std::string& where) {
  const auto it = m.find("content");
  if (it == m.end() || it->is_null()) {
    const auto calls = m.find("tool_calls");
    return calls != m.end() && !calls->is_null() ? calls->dump() : std::string();
  }
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    std::string text;
    for (const auto& part : *it) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) {
        text += part["text"].get<std::string>();
      }
    }
    return text;
  }
  throw TraceLineError(where + ".content",
                       std::string("expected a string or a list of parts, got ") + it->type_name());
}

// A chat-completions body names no conversation, but every request of one resends how it began:
// the messages up to its first user message. That opening (and the `user`, when given) is the
// conversation's key, so later turns join the conversation of their first.
std::uint64_t opening_key(const Request& r, size_t opening_messages) {
  std::uint64_t key = XXH3_64bits(r.session.data(), r.session.size());
  for (size_t i = 0; i < opening_messages; ++i) {
    key = XXH3_64bits_withSeed(&r.prompt[i].content_id, sizeof(std::uint64_t), key);
  }
  return key;
}

}  // namespace

Trace read_openai_chat_trace(const std::string& path, const OpenAiChatOptions& options) {
  Trace trace;
  double previous_ms = 0;
  double last_ms = -options.interval_ms;
  tsl::robin_map<std::uint64_t, std::int64_t> conversations;  // opening key -> conversation
  read_trace_lines(path, options, trace, [&](std::int64_t line_no, std::string_view text) {
    const nlohmann::json line_json = parse_json_line(text);
    const nlohmann::json& j =
        line_json.contains("body") && line_json["body"].is_object() ? line_json["body"] : line_json;
    const nlohmann::json& messages = json_field(j, "messages");
    if (!messages.is_array() || messages.empty()) {
      throw TraceLineError("messages", "expected a non-empty list of {role, content}, got " +
                                           std::string(messages.type_name()));
    }
    Request r;
    size_t opening = 0;  // messages up to the first user message
    for (std::size_t i = 0; i < messages.size(); ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      const nlohmann::json& m = messages[i];
      if (!m.is_object()) throw TraceLineError(where, "expected {role, content}");
      std::string role;
      try {
        role = json_string(m, "role");
      } catch (const TraceLineError& e) {
        throw TraceLineError(where + ".role", e.what());
      }
      const std::string body = message_text(m, where);
      // Role markers are tokens too, so the same text under another role is other content.
      const XXH64_hash_t role_seed = XXH3_64bits(role.data(), role.size());
      const std::uint64_t id = XXH3_64bits_withSeed(body.data(), body.size(), role_seed);
      const double tokens =
          std::ceil(static_cast<double>(utf8_length(body)) / options.chars_per_token);
      r.prompt.push_back(Segment{id, static_cast<std::int32_t>(std::max(1.0, tokens))});
      if (role == "user" && ++r.turn == 1) opening = i + 1;
    }
    r.prompt_tokens = total_tokens(r.prompt);
    if (json_has(j, "max_tokens")) {
      r.output_tokens = static_cast<std::int32_t>(json_tokens(j, "max_tokens", 1));
    } else if (json_has(j, "max_completion_tokens")) {
      r.output_tokens = static_cast<std::int32_t>(json_tokens(j, "max_completion_tokens", 1));
    } else {
      r.output_tokens = options.default_max_tokens;
    }
    if (json_has(j, "user")) r.session = json_string(j, "user");
    double ts = last_ms + options.interval_ms;
    const nlohmann::json& ts_src = json_has(line_json, "timestamp") ? line_json : j;
    if (json_has(ts_src, "timestamp")) {
      ts = json_timestamp_ms(ts_src, "timestamp");
      check_monotonic(ts, previous_ms, "timestamp");
    } else {
      previous_ms = std::max(previous_ms, ts);
    }
    last_ms = ts;
    // Last, so a line skipped as bad (skip_bad_lines) opens no conversation.
    if (r.turn > 0) {
      r.conversation =
          conversations
              .try_emplace(opening_key(r, opening), static_cast<std::int64_t>(conversations.size()))
              .first->second;
    }
    r.output_content_id = content_id(kTraceOutputContent, static_cast<std::uint64_t>(line_no), 0);
    r.arrival = ms_to_ns(ts);
    keep_in_window(trace, options, std::move(r));
  });
  return trace;
}

}  // namespace fleetsim
