#include "models/mig.h"

#include <gtest/gtest.h>

namespace fleetsim {
namespace {

TEST(Mig, EachCountOfInstancesGetsTheLargestProfileThatManyFit) {
  const GpuSpec& a100 = find_gpu("A100-80GB-SXM");
  const auto one = mig_profile(a100, 1);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->name(), "7g, 8/8 of the memory");
  EXPECT_EQ(mig_profile(a100, 2)->name(), "3g, 4/8 of the memory");  // 3g.40gb
  EXPECT_EQ(mig_profile(a100, 3)->name(), "2g, 2/8 of the memory");  // 2g.20gb
  EXPECT_EQ(mig_profile(a100, 4)->name(), "1g, 2/8 of the memory");  // 1g.20gb
  EXPECT_EQ(mig_profile(a100, 5)->name(), "1g, 1/8 of the memory");  // 1g.10gb
  EXPECT_EQ(mig_profile(a100, 7)->name(), "1g, 1/8 of the memory");
  EXPECT_FALSE(mig_profile(a100, 8));
  EXPECT_EQ(mig_max_instances(a100), 7);
  const GpuSpec& rtx = find_gpu("RTX-PRO-6000");
  EXPECT_EQ(mig_profile(rtx, 2)->name(), "2g, 2/4 of the memory");  // 2g.48gb
  EXPECT_EQ(mig_profile(rtx, 3)->name(), "1g, 1/4 of the memory");  // 1g.24gb
  EXPECT_FALSE(mig_profile(rtx, 5));
  EXPECT_EQ(mig_max_instances(rtx), 4);
  EXPECT_FALSE(mig_profile(find_gpu("L40S"), 1));
  EXPECT_EQ(mig_max_instances(find_gpu("L40S")), 0);
}

TEST(Mig, AnInstanceIsItsShareOfTheGpu) {
  const GpuSpec& a100 = find_gpu("A100-80GB-SXM");
  const GpuSpec g = mig_instance(a100, *mig_profile(a100, 2));
  EXPECT_EQ(g.name, "A100-80GB-SXM MIG 3g");
  EXPECT_DOUBLE_EQ(g.memory_gib, a100.memory_gib / 2);
  EXPECT_DOUBLE_EQ(g.memory_bandwidth_gbs, a100.memory_bandwidth_gbs / 2);
  EXPECT_DOUBLE_EQ(g.bf16_tflops, a100.bf16_tflops * 3 / 7);
  EXPECT_DOUBLE_EQ(g.int8_tops, a100.int8_tops * 3 / 7);
  EXPECT_EQ(g.interconnect_gbs, 0);
  EXPECT_EQ(g.compute_capability, a100.compute_capability);
  EXPECT_EQ(g.mig_slices, 0);  // an instance is not cut again
}

}  // namespace
}  // namespace fleetsim
