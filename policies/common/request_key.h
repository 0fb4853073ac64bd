// The request key that hashing policies (chwbl, consistent_hash, hrw, sticky_session) hash.
#pragma once

#include <cstdint>
#include <string>

#include "policies/policy.h"

namespace fleetsim {

// What a hashing policy hashes.
enum class RequestKey {
  kPrefix,   // the leading bytes of the prompt (its first segment, the system prompt) + model
  kSession,  // the request's session id
};

// "prefix" or "session"; anything else throws ScenarioError.
RequestKey parse_request_key(const std::string& text);

// The key's hash, exactly as ConsistentHashPolicy::key_hash (policies/chwbl) computes it, so
// chwbl, hrw and sticky_session send a given key through the same hash (a test pins this).
std::uint64_t request_key_hash(const Request& request, RequestKey key);

// True when the request carries the key (a session key needs a non-empty session id).
bool has_request_key(const Request& request, RequestKey key);

// The `key` parameter as chwbl declares it, for policies that hash the same keys.
ParamSpec& add_request_key_param(ParamSpec& spec);

}  // namespace fleetsim
