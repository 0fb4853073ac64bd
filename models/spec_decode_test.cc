#include "models/spec_decode.h"

#include <gtest/gtest.h>

#include "models/cost_model.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

DraftCost draft(SpecMethod m, const std::string& gpu = "H100-SXM", std::int32_t tp = 1) {
  return DraftCost(m, find_gpu(gpu), find_model("Llama-3.1-8B"), tp, kDefaultComputeEfficiency,
                   kDefaultBandwidthEfficiency);
}

TEST(DraftCost, AnEagleHeadStreamsOneLayerAndTheLmHeadPerPosition) {
  // One of Llama-3.1-8B's 32 layers (218M parameters) and its lm_head (525M) in BF16 at 0.82 of
  // an H100's 3.35 TB/s: 0.54 ms, plus the fixed 0.45 ms of a draft forward.
  const DraftCost eagle = draft(SpecMethod::kEagle);
  EXPECT_NEAR(ns_to_ms(eagle.time(1, 0, 1)), 0.54 + 0.45, 0.01);
  // Positions run one after another; requests share each forward.
  EXPECT_NEAR(static_cast<double>(eagle.time(1, 0, 3)),
              3.0 * static_cast<double>(eagle.time(1, 0, 1)), 3.0);
  EXPECT_EQ(eagle.time(8, 0, 1), eagle.time(1, 0, 1));         // still weight-bound at 8 requests
  EXPECT_GT(eagle.time(4096, 0, 1), 2 * eagle.time(1, 0, 1));  // compute-bound at thousands
  // The head reads its own layer of KV: 4 KiB a token for Llama-3.1-8B (128 KiB over 32 layers).
  EXPECT_NEAR(static_cast<double>(eagle.time(1, 1'000'000, 1) - eagle.time(1, 0, 1)),
              1e6 * 4096 / (kDefaultBandwidthEfficiency * 3350e9) * 1e9, 1e3);
  // Tensor parallelism splits the head's weights.
  EXPECT_LT(draft(SpecMethod::kEagle, "H100-SXM", 2).time(1, 0, 1), eagle.time(1, 0, 1));
  EXPECT_EQ(draft(SpecMethod::kMtp).time(1, 0, 1), eagle.time(1, 0, 1));
}

TEST(DraftCost, NgramAndNoneCostTheGpuNothing) {
  EXPECT_EQ(draft(SpecMethod::kNgram).time(16, 1000, 4), 0);
  EXPECT_EQ(draft(SpecMethod::kNone).time(16, 1000, 4), 0);
  EXPECT_EQ(spec_method_from("eagle"), SpecMethod::kEagle);
  EXPECT_THROW(spec_method_from("medusa"), UnknownNameError);
}

}  // namespace
}  // namespace fleetsim
