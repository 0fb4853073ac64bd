// Reader of OpenAI chat-completions requests as JSONL, one request per line:
//   {"messages": [{"role": "system", "content": "..."}, {"role": "user", "content": "..."}],
//    "max_tokens": 128, "timestamp": 1500}
// (the request body of POST /v1/chat/completions, platform.openai.com/docs/api-reference/chat;
// a Batch API line {"custom_id", "method", "url", "body": {...}} is read from its body).
// There is no tokenizer here: a message counts ceil(characters / chars_per_token) tokens (about 4
// characters a token for English with GPT/Llama tokenizers), and each distinct message is one
// content segment whose id is an xxHash of its role and text. So requests that resend the same
// messages (a chat history, a shared system prompt) share KV blocks over those messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "models/trace_common.h"

namespace fleetsim {

struct OpenAiChatOptions : TraceReadOptions {
  double chars_per_token = 4.0;
  std::int32_t default_max_tokens = 256;  // output tokens when a line has no max_tokens
  double interval_ms = 100;               // gap after the previous request when no timestamp
};

// `timestamp` (optional) is in milliseconds from the trace's start; max_completion_tokens is read
// when max_tokens is absent; `user` becomes the session id; turn = number of user messages, and
// requests that open with the same messages up to their first user message (and the same `user`)
// are turns of one conversation.
Trace read_openai_chat_trace(const std::string& path, const OpenAiChatOptions& options = {});

// Characters of UTF-8 text (code points, not bytes).
std::int64_t utf8_length(std::string_view text);

}  // namespace fleetsim
