#include "sim/fleet/gpu_defs.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

std::vector<GpuSpec> defs(const std::string& yaml) {
  return parse_gpu_defs(parse_yaml(yaml, "g.yaml"), YamlWhere{"g.yaml", "fleet.gpus"});
}

std::string error_of(const std::string& yaml) {
  try {
    defs(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(GpuDefs, ADatasheetGivesAGpuFoundBeforeTheCatalog) {
  const auto g = defs(
      "[{name: my-h100, memory_gib: 79.11, memory_bandwidth_gbs: 3350, bf16_tflops: 989.4, "
      "fp8_tflops: 1978.9, interconnect_gbs: 450}]");
  ASSERT_EQ(g.size(), 1u);
  EXPECT_DOUBLE_EQ(g[0].memory_gib, 79.11);
  EXPECT_DOUBLE_EQ(g[0].fp8_tflops, 1978.9);
  EXPECT_DOUBLE_EQ(g[0].int8_tops, 0);
  EXPECT_DOUBLE_EQ(g[0].bandwidth_efficiency, 0);  // not measured: the cost model's pooled value
  EXPECT_DOUBLE_EQ(defs("[{name: m, memory_gib: 40, memory_bandwidth_gbs: 1000, bf16_tflops: 100, "
                        "bandwidth_efficiency: 0.85}]")[0]
                       .bandwidth_efficiency,
                   0.85);
  // PCIe alone unless the datasheet says how many NVLink connects all to all.
  EXPECT_EQ(g[0].nvlink_gpus, 0);
  EXPECT_EQ(defs("[{name: m, memory_gib: 40, memory_bandwidth_gbs: 1000, bf16_tflops: 100, "
                 "interconnect_gbs: 450, nvlink_gpus: 8}]")[0]
                .nvlink_gpus,
            8);
  EXPECT_EQ(&find_gpu(g, "my-h100"), &g[0]);
  EXPECT_EQ(find_gpu(g, "H100-SXM").name, "H100-SXM");
  try {
    find_gpu(g, "H1000");
    FAIL() << "an unknown name was found";
  } catch (const UnknownNameError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("my-h100"), std::string::npos) << what;
    EXPECT_NE(what.find("A100-80GB-PCIe"), std::string::npos) << what;
  }
}

TEST(GpuDefs, BadDefinitionsNameTheField) {
  EXPECT_NE(error_of("[{name: x, memory_bandwidth_gbs: 1000, bf16_tflops: 100}]")
                .find("fleet.gpus.0.memory_gib: missing field 'memory_gib'"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory_gib: 40, bf16_tflops: 100}]")
                .find("missing field 'memory_bandwidth_gbs'"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory_gib: 40, memory_bandwidth_gbs: 1000}]")
                .find("missing field 'bf16_tflops'"),
            std::string::npos);
  EXPECT_NE(error_of("[{memory_gib: 40, memory_bandwidth_gbs: 1000, bf16_tflops: 100}]")
                .find("missing field 'name'"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: H200, memory_gib: 40, memory_bandwidth_gbs: 1, bf16_tflops: 1}]")
                .find("'H200' is a catalog GPU (fleetsim list gpus)"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory_gib: -1, memory_bandwidth_gbs: 1, bf16_tflops: 1}]")
                .find("fleet.gpus.0.memory_gib"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory: 40}]").find("unknown parameter"), std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory_gib: 4, memory_bandwidth_gbs: 1, bf16_tflops: 1, "
                     "bandwidth_efficiency: 1.5}]")
                .find("fleet.gpus.0.bandwidth_efficiency"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, memory_gib: 4, memory_bandwidth_gbs: 1, bf16_tflops: 1}, "
                     "{name: x, memory_gib: 4, memory_bandwidth_gbs: 1, bf16_tflops: 1}]")
                .find("duplicate GPU name 'x'"),
            std::string::npos);
  EXPECT_NE(error_of("{name: x}").find("expected a non-empty list of GPUs"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim
