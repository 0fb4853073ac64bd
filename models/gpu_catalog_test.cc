#include "models/gpu_catalog.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(GpuCatalog, HasTheElevenParts) {
  const auto names = gpu_names();
  ASSERT_EQ(names.size(), 11u);
  for (const char* n : {"A100-80GB-PCIe", "A100-80GB-SXM", "H100-SXM", "H100-PCIe", "H100-NVL",
                        "H200", "RTX-PRO-6000", "L40S", "B200", "L4", "A10"}) {
    EXPECT_EQ(find_gpu(n).name, n);
  }
}

TEST(GpuCatalog, DenseFiguresFromDatasheets) {
  const GpuSpec& a100 = find_gpu("A100-80GB-SXM");
  EXPECT_DOUBLE_EQ(a100.memory_bandwidth_gbs, 2039);
  EXPECT_DOUBLE_EQ(a100.bf16_tflops, 312);  // not the 624 sparsity figure
  EXPECT_DOUBLE_EQ(a100.fp8_tflops, 0);     // Ampere: no FP8 tensor cores
  EXPECT_DOUBLE_EQ(find_gpu("A100-80GB-PCIe").memory_bandwidth_gbs, 1935);

  const GpuSpec& h100 = find_gpu("H100-SXM");
  EXPECT_NEAR(h100.bf16_tflops, 989.4, 0.1);
  EXPECT_NEAR(h100.fp8_tflops, 2 * h100.bf16_tflops, 0.5);
  EXPECT_DOUBLE_EQ(find_gpu("H200").memory_bandwidth_gbs, 4800);
  EXPECT_DOUBLE_EQ(find_gpu("L40S").memory_bandwidth_gbs, 864);
  EXPECT_DOUBLE_EQ(find_gpu("RTX-PRO-6000").memory_bandwidth_gbs, 1792);
}

TEST(GpuCatalog, MemoryIsWhatCudaReportsBelowTheNominalSize) {
  // CUDA sees a little less than the marketing size (80 GB -> 79.25 GiB on an A100).
  EXPECT_NEAR(find_gpu("A100-80GB-PCIe").memory_gib, 79.25, 1e-9);
  for (const auto& g : gpu_catalog()) {
    EXPECT_GT(g.memory_gib, 20.0) << g.name;
    EXPECT_GT(g.interconnect_gbs, 0.0) << g.name;
    EXPECT_FALSE(g.source.empty()) << g.name;
    if (g.fp8_tflops > 0) {
      EXPECT_GT(g.fp8_tflops, g.bf16_tflops) << g.name;
    }
  }
  EXPECT_LT(find_gpu("H200").memory_gib, 141.0);
  EXPECT_LT(find_gpu("RTX-PRO-6000").memory_gib, 96.0);
}

TEST(GpuCatalog, UnknownNameListsTheValidOnes) {
  try {
    find_gpu("B300");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("B300"), std::string::npos);
    EXPECT_NE(msg.find("A100-80GB-SXM"), std::string::npos);
    EXPECT_NE(msg.find("L40S"), std::string::npos);
  }
}

}  // namespace
}  // namespace fleetsim
