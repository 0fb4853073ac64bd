#include "models/calibration.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "models/calibration_test_util.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

using testing::fitted_options;
using testing::roofline_options;
using testing::synthetic_steps;
using testing::truth_fitted;
using testing::truth_roofline;

std::string error_of(const std::vector<StepSample>& steps, const CalibrationOptions& o) {
  try {
    calibrate(steps, o, "m.csv");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------------------------------------
// Fits.

TEST(Calibration, RooflineRecoversKnownEfficienciesAndOverhead) {
  const auto steps = synthetic_steps(truth_roofline(), 600, 0.02, 1);
  const CalibrationResult r = calibrate(steps, roofline_options(), "m.csv");
  EXPECT_EQ(r.form, "roofline");
  EXPECT_NEAR(r.param("compute_efficiency"), 0.6, 0.6 * 0.02);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.7, 0.7 * 0.02);
  EXPECT_NEAR(r.param("step_overhead_ms"), 2.0, 0.15);
  EXPECT_TRUE(r.settled);
  EXPECT_GE(r.iterations, 1);
  ASSERT_EQ(r.quality.size(), 3u);  // all, compute-bound, memory-bound
  EXPECT_EQ(r.quality[0].label, "all");
  EXPECT_EQ(r.quality[0].rows, 600);
  EXPECT_EQ(r.quality[1].rows + r.quality[2].rows, 600);
  EXPECT_GT(r.quality[1].rows, 50);
  EXPECT_GT(r.quality[2].rows, 50);
  EXPECT_GT(r.quality[0].r2, 0.99);
  // 2% Gaussian noise: mean |error| about 0.8 x 2% = 1.6%.
  EXPECT_NEAR(r.quality[0].mean_abs_error_pct, 1.6, 0.3);
  for (const auto& p : r.params) {
    EXPECT_GT(p.std_error, 0) << p.name;
    EXPECT_FALSE(p.fixed) << p.name;
  }
}

TEST(Calibration, RooflineWithoutNoiseIsExact) {
  const auto steps = synthetic_steps(truth_roofline(), 90, 0.0, 2);
  const CalibrationResult r = calibrate(steps, roofline_options());
  EXPECT_NEAR(r.param("compute_efficiency"), 0.6, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 2.0, 1e-4);
  EXPECT_LT(r.quality[0].max_abs_error_pct, 1e-3);
}

TEST(Calibration, RooflineStartsFarFromTheTruthAndSettles) {
  // Efficiencies far from the defaults the regimes start from.
  const RooflineCostModel slow(
      find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1,
      {.compute_efficiency = 0.3, .bandwidth_efficiency = 0.95, .step_overhead_ms = 0.5});
  const CalibrationResult r = calibrate(synthetic_steps(slow, 300, 0.01, 3), roofline_options());
  EXPECT_NEAR(r.param("compute_efficiency"), 0.3, 0.3 * 0.02);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.95, 0.95 * 0.02);
  EXPECT_TRUE(r.settled);
  EXPECT_GT(r.iterations, 1);
}

TEST(Calibration, RooflineWithTensorParallelismSubtractsTheAllReduce) {
  const RooflineCostModel tp2(
      find_gpu("H100-SXM"), find_model("Llama-3.1-70B"), 2,
      {.compute_efficiency = 0.65, .bandwidth_efficiency = 0.75, .step_overhead_ms = 1.0});
  CalibrationOptions o = roofline_options();
  o.target.gpu = "H100-SXM";
  o.target.model = "Llama-3.1-70B";
  o.target.tp = 2;
  const CalibrationResult r = calibrate(synthetic_steps(tp2, 300, 0.0, 4), o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.65, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 1.0, 1e-4);
}

TEST(Calibration, RooflineOnGpusWithoutPeerToPeerHoldsTheHostPath) {
  // Two PCIe A100s that cannot reach each other: every all-reduce goes through host memory.
  const RooflineCostModel host(find_gpu("A100-80GB-PCIe"), find_model("Qwen2.5-7B-Instruct"), 2,
                               {.compute_efficiency = 0.65,
                                .bandwidth_efficiency = 0.75,
                                .step_overhead_ms = 1.0,
                                .allreduce_latency_us = kHostAllreduceLatencyUs,
                                .allreduce_path = AllreducePath::kHost});
  const auto steps = synthetic_steps(host, 300, 0.0, 4);
  CalibrationOptions o = roofline_options();
  o.target.gpu = "A100-80GB-PCIe";
  o.target.model = "Qwen2.5-7B-Instruct";
  o.target.tp = 2;
  o.target.allreduce_path = "host";
  const CalibrationResult r = calibrate(steps, o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.65, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 1.0, 1e-4);
  EXPECT_NE(calibration_yaml(r).find("  allreduce_path: host\n"), std::string::npos);
  // Fitted as if the GPUs had the PCIe link, the all-reduces' time lands in the constants.
  o.target.allreduce_path = "p2p";
  const CalibrationResult wrong = calibrate(steps, o);
  EXPECT_GT(std::abs(wrong.param("compute_efficiency") - 0.65), 0.05);
  EXPECT_EQ(calibration_yaml(wrong).find("allreduce_path"), std::string::npos);
  o.target.allreduce_path = "nvswitch";
  EXPECT_NE(error_of(steps, o).find("valid paths: p2p, host"), std::string::npos);
}

// Qwen3-30B-A3B on an H100 at efficiencies 0.7 and 0.75 and 1.5 ms a step, `k`'s other
// constants; and the options that fit it.
RooflineCostModel qwen3_moe_server(RooflineConstants k) {
  k.compute_efficiency = 0.7;
  k.bandwidth_efficiency = 0.75;
  k.step_overhead_ms = 1.5;
  return RooflineCostModel(find_gpu("H100-SXM"), find_model("Qwen3-30B-A3B"), 1, k);
}

CalibrationOptions qwen3_moe_options() {
  CalibrationOptions o = roofline_options();
  o.target.gpu = "H100-SXM";
  o.target.model = "Qwen3-30B-A3B";
  return o;
}

TEST(Calibration, RooflineOfAMixtureOfExpertsHoldsItsFusedGemmFactor) {
  // The experts run at moe_gemm_factor of the dense speed: fitted under the factor the timings
  // were made with, the efficiencies come back; the file carries the factor.
  const RooflineCostModel moe = qwen3_moe_server({.moe_gemm_factor = 0.4});
  CalibrationOptions o = qwen3_moe_options();
  o.target.moe_gemm_factor = 0.4;
  const CalibrationResult r = calibrate(synthetic_steps(moe, 150, 0.0, 18), o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NE(calibration_yaml(r).find("  moe_gemm_factor: 0.4\n"), std::string::npos);
  EXPECT_NE(calibration_yaml(r).find("  moe_routing_us: 20\n"), std::string::npos);
  o.target.moe_gemm_factor = 0;
  EXPECT_NE(error_of(synthetic_steps(moe, 10, 0.0, 18), o).find("fused-MoE GEMM factor"),
            std::string::npos);
}

TEST(Calibration, RooflineOfAMixtureOfExpertsHoldsItsRoutingTime) {
  // Timings of a server whose routing kernels take 35 us a layer: held at 35, the fit gives the
  // efficiencies and the overhead back; held at the default, the 15 us a layer too few land in
  // the constants.
  const std::vector<StepSample> steps =
      synthetic_steps(qwen3_moe_server({.moe_routing_us = 35.0}), 150, 0.0, 19);
  CalibrationOptions o = qwen3_moe_options();
  o.target.moe_routing_us = 35.0;
  const CalibrationResult r = calibrate(steps, o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 1.5, 1e-6);
  EXPECT_NE(calibration_yaml(r).find("  moe_routing_us: 35\n"), std::string::npos);
  o.target.moe_routing_us = kDefaultMoeRoutingUs;
  const CalibrationResult held_wrong = calibrate(steps, o);
  EXPECT_GT(std::abs(held_wrong.param("step_overhead_ms") - 1.5) +
                std::abs(held_wrong.param("bandwidth_efficiency") - 0.75),
            0.05);
  o.target.moe_routing_us = -1;
  EXPECT_NE(error_of(steps, o).find("MoE routing time"), std::string::npos);
}

TEST(Calibration, RooflineOfAnExpertParallelServerWaitsForItsBusiestGpu) {
  // Timings of Qwen3-30B-A3B over four GPUs with its experts spread whole: fitted as such, the
  // constants come back; fitted as if the experts were split, the busiest GPU's extra time
  // lands in them.
  const RooflineCostModel spread(find_gpu("H100-SXM"), find_model("Qwen3-30B-A3B"), 4,
                                 {.compute_efficiency = 0.7,
                                  .bandwidth_efficiency = 0.75,
                                  .step_overhead_ms = 1.5,
                                  .expert_parallel = true});
  const std::vector<StepSample> steps = synthetic_steps(spread, 150, 0.0, 20);
  CalibrationOptions o = qwen3_moe_options();
  o.target.tp = 4;
  o.target.expert_parallel = true;
  const CalibrationResult r = calibrate(steps, o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 1.5, 1e-6);
  EXPECT_TRUE(calibration_json(r)["target"]["expert_parallel"].get<bool>());
  o.target.expert_parallel = false;
  const CalibrationResult split = calibrate(steps, o);
  EXPECT_GT(std::abs(split.param("bandwidth_efficiency") - 0.75) +
                std::abs(split.param("step_overhead_ms") - 1.5),
            0.02);
}

TEST(Calibration, RooflineOfADequantizingModelHoldsItsGemmFactor) {
  // FP8 weights on an A100 (no FP8 tensor cores): the linear layers run at factor x efficiency.
  const RooflineCostModel fp8(find_gpu("A100-80GB-PCIe"), find_model("Qwen3-32B-FP8"), 1,
                              {.compute_efficiency = 0.7,
                               .bandwidth_efficiency = 0.75,
                               .step_overhead_ms = 1.5,
                               .dequant_gemm_factor = 0.5});
  CalibrationOptions o = roofline_options();
  o.target.gpu = "A100-80GB-PCIe";
  o.target.model = "Qwen3-32B-FP8";
  o.target.dequant_gemm_factor = 0.5;
  const CalibrationResult r = calibrate(synthetic_steps(fp8, 150, 0.0, 16), o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  ASSERT_EQ(r.settings.size(), 4u);
  EXPECT_EQ(r.settings[0].first, "dequant_gemm_factor");
  EXPECT_NE(calibration_yaml(r).find("  dequant_gemm_factor: 0.5\n"), std::string::npos);
  // A BF16 model has no such setting, only the roofline's shape, held at what it was fitted with.
  const auto bf16 = calibrate(synthetic_steps(truth_roofline(), 60, 0.0, 17), roofline_options());
  ASSERT_EQ(bf16.settings.size(), 3u);
  EXPECT_EQ(bf16.settings[0].first, "unoverlapped_fraction");
  EXPECT_EQ(bf16.settings[1].first, "kernel_floor_us");
  EXPECT_EQ(bf16.settings[2].first, "elementwise_efficiency");
}

TEST(Calibration, RooflineTakesTheHeldElementwiseTimeOffBeforeFitting) {
  // Steps timed with slow element-wise kernels: held at their speed, the fit recovers the GEMMs'
  // efficiencies exactly; held at the default, it charges their extra time to the GEMMs.
  const RooflineCostModel slow(find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1,
                               {.compute_efficiency = 0.7,
                                .bandwidth_efficiency = 0.75,
                                .step_overhead_ms = 1.5,
                                .elementwise_efficiency = 0.2});
  const auto steps = synthetic_steps(slow, 150, 0.0, 18);
  CalibrationOptions o = roofline_options();
  o.target.elementwise_efficiency = 0.2;
  const CalibrationResult held = calibrate(steps, o);
  EXPECT_NEAR(held.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(held.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NE(calibration_yaml(held).find("  elementwise_efficiency: 0.2\n"), std::string::npos);
  const CalibrationResult assumed = calibrate(steps, roofline_options());
  EXPECT_LT(assumed.param("compute_efficiency"), 0.69);
}

TEST(Calibration, FittedRecoversKnownCoefficients) {
  const FittedCoefficients truth = truth_fitted();
  const auto steps = synthetic_steps(FittedCostModel(truth), 900, 0.02, 5);
  const CalibrationResult r = calibrate(steps, fitted_options(), "m.csv");
  EXPECT_EQ(r.form, "fitted");
  EXPECT_NEAR(r.param("prefill_a_ms"), truth.prefill_a_ms, 0.05 * truth.prefill_a_ms);
  EXPECT_NEAR(r.param("prefill_b_ms_per_token"), truth.prefill_b_ms_per_token,
              0.03 * truth.prefill_b_ms_per_token);
  EXPECT_NEAR(r.param("prefill_c_ms_per_token2"), truth.prefill_c_ms_per_token2,
              0.05 * truth.prefill_c_ms_per_token2);
  EXPECT_NEAR(r.param("decode_a_ms"), truth.decode_a_ms, 0.03 * truth.decode_a_ms);
  EXPECT_NEAR(r.param("decode_b_ms_per_ctx_token"), truth.decode_b_ms_per_ctx_token,
              0.05 * truth.decode_b_ms_per_ctx_token);
  EXPECT_NEAR(r.param("decode_c_ms_per_seq"), truth.decode_c_ms_per_seq,
              0.10 * truth.decode_c_ms_per_seq);
  ASSERT_EQ(r.quality.size(), 4u);  // all, prefill only, decode only, mixed
  EXPECT_EQ(r.quality[1].label, "prefill_only");
  EXPECT_EQ(r.quality[2].label, "decode_only");
  EXPECT_EQ(r.quality[3].label, "mixed");
  EXPECT_EQ(r.quality[1].rows, 300);
  EXPECT_GT(r.quality[0].r2, 0.99);
}

TEST(Calibration, FittedWithoutNoiseIsExact) {
  const FittedCoefficients truth = truth_fitted();
  const CalibrationResult r =
      calibrate(synthetic_steps(FittedCostModel(truth), 60, 0.0, 6), fitted_options());
  EXPECT_NEAR(r.param("prefill_c_ms_per_token2"), truth.prefill_c_ms_per_token2, 1e-12);
  EXPECT_NEAR(r.param("decode_c_ms_per_seq"), truth.decode_c_ms_per_seq, 1e-9);
  EXPECT_LT(r.quality[0].max_abs_error_pct, 1e-6);
}

TEST(Calibration, FittedFormOfRooflineStepsIsApproximate) {
  // The fitted form cannot bend at the roofline's kink, but it gets close on average.
  const CalibrationResult r =
      calibrate(synthetic_steps(truth_roofline(), 300, 0.0, 7), fitted_options());
  EXPECT_GT(r.quality[0].r2, 0.95);
  EXPECT_LT(r.quality[0].mean_abs_error_pct, 25);
}

// ---------------------------------------------------------------------------------------------
// What the data cannot identify.

std::vector<StepSample> only_kind(const std::vector<StepSample>& steps, int kind) {
  std::vector<StepSample> out;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (static_cast<int>(i % 3) == kind) out.push_back(steps[i]);
  }
  return out;
}

TEST(Calibration, FittedWithoutPrefillsNamesTheMissingCoefficients) {
  const auto decodes = only_kind(synthetic_steps(FittedCostModel(truth_fitted()), 90, 0.0, 8), 1);
  const std::string e = error_of(decodes, fitted_options());
  EXPECT_NE(e.find("cannot fit the fitted form to m.csv (30 rows)"), std::string::npos) << e;
  for (const char* name : {"prefill_a_ms", "prefill_b_ms_per_token", "prefill_c_ms_per_token2"}) {
    EXPECT_NE(e.find(std::string(name) + ": no step has a prefill"), std::string::npos) << e;
    EXPECT_NE(e.find(std::string("--fix ") + name + "=VALUE"), std::string::npos) << e;
  }
  EXPECT_EQ(e.find("decode_a_ms"), std::string::npos) << e;
}

TEST(Calibration, FittedOnSingleStreamRequestsCannotSeparateDecodeIntercept) {
  // One request at a time: every decode step has one decode, so decode_c is decode_a.
  const FittedCoefficients truth = truth_fitted();
  const FittedCostModel model(truth);
  std::vector<StepSample> steps;
  for (int i = 0; i < 20; ++i) {
    const std::vector<BatchEntry> prefill = {{100 + 300 * i, 0}};
    const std::vector<BatchEntry> decode = {{1, 200 + 400 * i}};
    steps.push_back({prefill, model.step_time_ms(prefill), i, "ttft"});
    steps.push_back({decode, model.step_time_ms(decode), i, "tpot"});
  }
  const std::string e = error_of(steps, fitted_options());
  EXPECT_NE(e.find("decode_c_ms_per_seq cannot be told apart from decode_a_ms"), std::string::npos)
      << e;
  EXPECT_NE(e.find("--fix decode_c_ms_per_seq=VALUE"), std::string::npos) << e;

  // Holding decode_c at its value identifies the rest.
  CalibrationOptions o = fitted_options();
  o.fixed["decode_c_ms_per_seq"] = truth.decode_c_ms_per_seq;
  const CalibrationResult r = calibrate(steps, o);
  EXPECT_NEAR(r.param("decode_a_ms"), truth.decode_a_ms, 1e-9);
  EXPECT_NEAR(r.param("prefill_c_ms_per_token2"), truth.prefill_c_ms_per_token2, 1e-12);
  EXPECT_EQ(r.layout, "requests");
  for (const auto& p : r.params) EXPECT_EQ(p.fixed, p.name == "decode_c_ms_per_seq") << p.name;
}

TEST(Calibration, RooflineWithoutComputeBoundStepsNamesComputeEfficiency) {
  const auto decodes = only_kind(synthetic_steps(truth_roofline(), 90, 0.01, 9), 1);
  const std::string e = error_of(decodes, roofline_options());
  EXPECT_NE(e.find("compute_efficiency: no step is compute-bound"), std::string::npos) << e;
  EXPECT_NE(e.find("--fix compute_efficiency=VALUE"), std::string::npos) << e;

  CalibrationOptions o = roofline_options();
  o.fixed["compute_efficiency"] = 0.6;
  const CalibrationResult r = calibrate(decodes, o);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.7, 0.7 * 0.02);
  EXPECT_DOUBLE_EQ(r.param("compute_efficiency"), 0.6);
}

TEST(Calibration, RooflineClampsANegativeOverheadAtZero) {
  const RooflineCostModel none(
      find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1,
      {.compute_efficiency = 0.6, .bandwidth_efficiency = 0.7, .step_overhead_ms = 0.0});
  auto steps = synthetic_steps(none, 60, 0.0, 10);
  for (auto& s : steps) s.step_ms -= 0.5;  // as if every step had a negative overhead
  const CalibrationResult r = calibrate(steps, roofline_options());
  EXPECT_GE(r.param("step_overhead_ms"), 0.0);
  bool noted = false;
  for (const auto& n : r.notes) noted |= n.find("held at 0") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Calibration, RooflineOnTheWrongGpuIsRejected) {
  // H100 steps read as A100 steps: faster than the A100's peak allows.
  const RooflineCostModel h100(
      find_gpu("H100-SXM"), find_model("Llama-3.1-8B"), 1,
      {.compute_efficiency = 0.6, .bandwidth_efficiency = 0.7, .step_overhead_ms = 2.0});
  const std::string e = error_of(synthetic_steps(h100, 60, 0.0, 11), roofline_options());
  EXPECT_NE(e.find("outside [0.01, 1]"), std::string::npos) << e;
  EXPECT_NE(e.find("check --gpu"), std::string::npos) << e;
}

TEST(Calibration, BadOptionsAreNamed) {
  const auto steps = synthetic_steps(truth_roofline(), 30, 0.0, 12);
  CalibrationOptions o = roofline_options();
  o.form = "spline";
  EXPECT_THROW(calibrate(steps, o), UnknownNameError);
  o = roofline_options();
  o.target.gpu = "";
  EXPECT_NE(error_of(steps, o).find("needs the GPU and the model"), std::string::npos);
  o = roofline_options();
  o.target.model = "GPT-5";
  EXPECT_THROW(calibrate(steps, o), UnknownNameError);
  o = roofline_options();
  o.fixed["prefill_a_ms"] = 1.0;
  try {
    calibrate(steps, o);
    ADD_FAILURE() << "no error";
  } catch (const UnknownNameError& e) {
    EXPECT_NE(std::string(e.what()).find("valid roofline parameters"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("compute_efficiency"), std::string::npos);
  }
  o = roofline_options();
  o.fixed["compute_efficiency"] = 1.5;
  EXPECT_NE(error_of(steps, o).find("expected a number in [0.01, 1]"), std::string::npos);
  EXPECT_THROW(calibrate({}, fitted_options()), Error);
  EXPECT_NE(error_of({steps[0], steps[1]}, fitted_options()).find("2 rows for 6 coefficients"),
            std::string::npos);
}

TEST(Calibration, AFitAScenarioWouldRefuseIsAnErrorNotAFile) {
  // Durations typed in nanoseconds where milliseconds are expected, absurdly large.
  auto steps = synthetic_steps(FittedCostModel(truth_fitted()), 60, 0.01, 13);
  for (auto& s : steps) s.step_ms *= 1e300;
  const std::string e = error_of(steps, fitted_options());
  EXPECT_NE(e.find("cannot calibrate from m.csv: the fit gives prefill_a_ms = "), std::string::npos)
      << e;
  EXPECT_NE(e.find("where a scenario accepts it"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
