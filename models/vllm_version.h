// The vLLM release a pod models, for the few server settings whose default changed between
// releases. A setting given in the scenario wins; one left out takes its release's default.
#pragma once

#include <array>
#include <string>

#include "models/llm_catalog.h"

namespace fleetsim {

class Params;

struct VllmVersion {
  std::array<int, 3> parts{0, 0, 0};  // major, minor, patch (a fourth part, 0.10.1.1's, is kept
                                      // out: no default changed in one)
  auto operator<=>(const VllmVersion&) const = default;
  std::string text() const;
};

// "0.30.0", "0.11", "v0.10.1.1". Throws ScenarioError (prefixed with `where`) on anything else.
VllmVersion parse_vllm_version(const std::string& text, const std::string& where);

// The release whose defaults a server without `vllm_version` follows.
inline constexpr const char* kDefaultVllmVersion = "0.30.0";

// gpu_memory_utilization: 0.9 until v0.20, 0.92 since (vllm-project/vllm#38284, in v0.20.0;
// vllm/config/cache.py `Field(default=0.92, ...)`).
double default_gpu_memory_utilization(const VllmVersion& v);

// Whether the KV cache is sized after setting the CUDA graphs' memory aside
// (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS): off until v0.20 (vllm/envs.py, "Disabled by default
// to preserve existing behavior", PR #30515), on since (#38284; the worker logs "CUDA graph memory
// profiling is enabled (default since v0.21.0)"). From v0.25.1 dense models run on Model Runner
// V2, whose profile_cudagraph_memory() returns 0 (vllm-project/vllm#49224, reported still so in
// August 2026), so only mixture-of-experts models, still on the first runner, set any aside.
bool default_estimates_cudagraph_memory(const VllmVersion& v, const LlmSpec& llm);

// The server's settings with the release's defaults filled in: an explicit value wins.
double gpu_memory_utilization_of(const Params& server);
bool estimates_cudagraph_memory(const Params& server, const LlmSpec& llm);

}  // namespace fleetsim
