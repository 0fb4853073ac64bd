#include "models/vllm_version.h"

#include <charconv>
#include <vector>

#include "sim/errors.h"
#include "sim/params.h"

namespace fleetsim {

std::string VllmVersion::text() const {
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
}

VllmVersion parse_vllm_version(const std::string& text, const std::string& where) {
  const auto fail = [&] {
    return ScenarioError(where +
                         ": expected a vLLM release such as 0.30.0 (MAJOR.MINOR, "
                         "MAJOR.MINOR.PATCH or 0.10.1.1), got '" +
                         text + "'");
  };
  std::string_view s = text;
  if (!s.empty() && (s.front() == 'v' || s.front() == 'V')) s.remove_prefix(1);
  std::vector<int> parts;
  while (true) {
    int value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end == s.data() || value < 0) throw fail();
    parts.push_back(value);
    s.remove_prefix(static_cast<size_t>(end - s.data()));
    if (s.empty()) break;
    if (s.front() != '.') throw fail();
    s.remove_prefix(1);
  }
  if (parts.size() < 2 || parts.size() > 4) throw fail();
  VllmVersion v;
  for (size_t i = 0; i < 3 && i < parts.size(); ++i) v.parts[i] = parts[i];
  return v;
}

namespace {
constexpr VllmVersion kUtilization092{{0, 20, 0}};
constexpr VllmVersion kModelRunnerV2Dense{{0, 25, 1}};

VllmVersion version_of(const Params& server) {
  return parse_vllm_version(server.get_string("vllm_version"), "server.vllm_version");
}
}  // namespace

double default_gpu_memory_utilization(const VllmVersion& v) {
  return v < kUtilization092 ? 0.9 : 0.92;
}

bool default_estimates_cudagraph_memory(const VllmVersion& v, const LlmSpec& llm) {
  if (v < kUtilization092) return false;
  return v < kModelRunnerV2Dense || llm.is_moe();
}

double gpu_memory_utilization_of(const Params& server) {
  const double set = server.get_double("gpu_memory_utilization");
  return set > 0 ? set : default_gpu_memory_utilization(version_of(server));
}

bool estimates_cudagraph_memory(const Params& server, const LlmSpec& llm) {
  const std::string& set = server.get_string("estimate_cudagraph_memory");
  if (set == "auto") return default_estimates_cudagraph_memory(version_of(server), llm);
  return set == "true";
}

}  // namespace fleetsim
