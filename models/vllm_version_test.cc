#include "models/vllm_version.h"

#include <gtest/gtest.h>

#include <string>

#include "models/engine.h"
#include "sim/errors.h"
#include "sim/params.h"

namespace fleetsim {
namespace {

VllmVersion v(const std::string& text) { return parse_vllm_version(text, "here"); }

std::string error_of(const std::string& text) {
  try {
    parse_vllm_version(text, "s.yaml:4: fleet.server.vllm_version");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(VllmVersion, ReadsAReleaseAndOrdersReleasesByNumber) {
  EXPECT_EQ(v("0.30.0").parts, (std::array<int, 3>{0, 30, 0}));
  EXPECT_EQ(v("v0.11").parts, (std::array<int, 3>{0, 11, 0}));
  EXPECT_EQ(v("0.10.1.1").parts, (std::array<int, 3>{0, 10, 1}));
  EXPECT_LT(v("0.9.2"), v("0.10.0"));  // by number, not by text
  EXPECT_LT(v("0.25.0"), v("0.25.1"));
  EXPECT_EQ(v("0.20"), v("0.20.0"));
  EXPECT_EQ(v("0.19.1").text(), "0.19.1");
}

TEST(VllmVersion, ANonReleaseIsRefusedWithWhereAndWhat) {
  for (const char* bad : {"", "banana", "0", "0.x", "0..1", "1.2.3.4.5", "0.30.0rc1", "-1.2"}) {
    const std::string e = error_of(bad);
    EXPECT_NE(e.find("s.yaml:4: fleet.server.vllm_version: expected a vLLM release such as "
                     "0.30.0"),
              std::string::npos)
        << bad << ": " << e;
    EXPECT_NE(e.find(std::string("got '") + bad + "'"), std::string::npos) << e;
  }
}

LlmSpec moe() {
  LlmSpec m = find_model("Qwen3-8B");
  m.num_experts = 8;
  return m;
}

TEST(VllmVersion, DefaultsChangeWhereVllmChangedThem) {
  const LlmSpec dense = find_model("Qwen3-8B");
  ASSERT_FALSE(dense.is_moe());
  EXPECT_DOUBLE_EQ(default_gpu_memory_utilization(v("0.19.1")), 0.9);
  EXPECT_DOUBLE_EQ(default_gpu_memory_utilization(v("0.20.0")), 0.92);
  EXPECT_DOUBLE_EQ(default_gpu_memory_utilization(v("0.30.0")), 0.92);
  EXPECT_FALSE(default_estimates_cudagraph_memory(v("0.10.1"), dense));
  EXPECT_FALSE(default_estimates_cudagraph_memory(v("0.19.1"), moe()));
  EXPECT_TRUE(default_estimates_cudagraph_memory(v("0.20.0"), dense));
  EXPECT_TRUE(default_estimates_cudagraph_memory(v("0.25.0"), dense));
  // Model Runner V2, dense models' default from 0.25.1, sets nothing aside.
  EXPECT_FALSE(default_estimates_cudagraph_memory(v("0.25.1"), dense));
  EXPECT_TRUE(default_estimates_cudagraph_memory(v("0.25.1"), moe()));
}

Params server(const std::string& version, double utilization, const std::string& estimate) {
  Params p = server_spec().defaults();
  p.set("vllm_version", version);
  p.set("gpu_memory_utilization", utilization);
  p.set("estimate_cudagraph_memory", estimate);
  return p;
}

TEST(VllmVersion, ASettingGivenWinsOverTheReleasesDefault) {
  const LlmSpec dense = find_model("Qwen3-8B");
  EXPECT_DOUBLE_EQ(gpu_memory_utilization_of(server("0.30.0", 0.0, "auto")), 0.92);
  EXPECT_DOUBLE_EQ(gpu_memory_utilization_of(server("0.11.0", 0.0, "auto")), 0.9);
  EXPECT_DOUBLE_EQ(gpu_memory_utilization_of(server("0.30.0", 0.5, "auto")), 0.5);
  EXPECT_TRUE(estimates_cudagraph_memory(server("0.22.0", 0.0, "auto"), dense));
  EXPECT_FALSE(estimates_cudagraph_memory(server("0.22.0", 0.0, "false"), dense));
  EXPECT_TRUE(estimates_cudagraph_memory(server("0.10.1", 0.0, "true"), dense));
  // Left out, the release is the latest fleetsim knows.
  EXPECT_EQ(server_spec().defaults().get_string("vllm_version"), kDefaultVllmVersion);
}

}  // namespace
}  // namespace fleetsim
