// What a pod does under prefill/decode disaggregation (llm-d's prefill and decode deployments,
// vLLM's NixlConnector): kBoth serves whole requests; kPrefill computes prompts for decode pods;
// kDecode decodes, reading each prompt's KV from the prefill pod that computed it.
#pragma once

#include <string>
#include <vector>

namespace fleetsim {

enum class PodRole { kBoth, kPrefill, kDecode };

// The names a scenario uses (both, prefill, decode), in enum order.
inline const std::vector<std::string>& pod_role_names() {
  static const std::vector<std::string> kNames = {"both", "prefill", "decode"};
  return kNames;
}

}  // namespace fleetsim
