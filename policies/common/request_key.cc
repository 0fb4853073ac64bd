#include "policies/common/request_key.h"

#include <xxhash.h>

#include "sim/errors.h"

namespace fleetsim {

RequestKey parse_request_key(const std::string& text) {
  if (text == "prefix") return RequestKey::kPrefix;
  if (text == "session") return RequestKey::kSession;
  throw ScenarioError("key: '" + text + "' is not one of: prefix, session");
}

std::uint64_t request_key_hash(const Request& request, RequestKey key) {
  if (key == RequestKey::kSession) {
    return XXH3_64bits(request.session.data(), request.session.size());
  }
  const std::uint64_t prefix = request.prefix_key();
  const std::uint64_t model = XXH3_64bits(request.model.data(), request.model.size());
  return XXH3_64bits_withSeed(&prefix, sizeof prefix, model);
}

bool has_request_key(const Request& request, RequestKey key) {
  return key == RequestKey::kPrefix || !request.session.empty();
}

ParamSpec& add_request_key_param(ParamSpec& spec) {
  return spec.text("key", "prefix",
                   "what is hashed: 'prefix' = the leading bytes of the prompt (its first segment, "
                   "the system prompt) plus the model name; 'session' = the request's session id",
                   {"prefix", "session"});
}

}  // namespace fleetsim
