#include "models/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "sim/errors.h"
#include "sim/rng.h"

namespace fleetsim {
namespace {

// ---------------------------------------------------------------------------------------------
// Step timings made by the simulator's own cost models, with multiplicative noise. Draws come
// from the raw mt19937_64 output (the std:: distributions differ between standard libraries),
// so the committed example files regenerate identically everywhere.

double uniform(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int uniform_int(Rng& rng, int lo, int hi) {
  return std::min(hi, lo + static_cast<int>(uniform(rng) * (hi - lo + 1)));
}

// Log-uniform integer in [lo, hi]: as many short prefills as long ones.
int log_uniform_int(Rng& rng, int lo, int hi) {
  return static_cast<int>(
      std::lround(std::exp(std::log(lo) + uniform(rng) * std::log(1.0 * hi / lo))));
}

double normal(Rng& rng) {  // Box-Muller
  const double u1 = 1.0 - uniform(rng);
  const double u2 = uniform(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// COUNT entries of NEW new tokens on CTX context tokens.
struct Group {
  int count, new_tokens, context;
};

struct SyntheticStep {
  std::vector<Group> groups;
  std::vector<BatchEntry> batch;
};

// Kind 0: one to three prefills (some on a cached prefix); 1: one to four groups of decodes;
// 2: a prefill chunk with decodes.
SyntheticStep random_step(Rng& rng, int kind) {
  SyntheticStep s;
  if (kind == 0 || kind == 2) {
    const int prefills = kind == 0 ? uniform_int(rng, 1, 3) : 1;
    for (int i = 0; i < prefills; ++i) {
      const int ctx = uniform(rng) < 0.3 ? 16 * uniform_int(rng, 1, 256) : 0;
      s.groups.push_back({1, log_uniform_int(rng, 16, kind == 0 ? 8192 : 2048), ctx});
    }
  }
  if (kind == 1 || kind == 2) {
    const int groups = uniform_int(rng, 1, 4);
    for (int i = 0; i < groups; ++i) {
      s.groups.push_back({log_uniform_int(rng, 1, 64), 1, uniform_int(rng, 64, 8000)});
    }
  }
  for (const auto& g : s.groups) {
    for (int i = 0; i < g.count; ++i) s.batch.push_back({g.new_tokens, g.context});
  }
  return s;
}

double step_ms(const RooflineCostModel& m, std::span<const BatchEntry> b) {
  return m.breakdown(b).total_ms;
}
double step_ms(const FittedCostModel& m, std::span<const BatchEntry> b) {
  return m.step_time_ms(b);
}

template <typename Model>
std::vector<StepSample> synthetic_steps(const Model& model, int rows, double noise,
                                        std::uint64_t seed) {
  Rng rng = make_rng(seed, "calibration-test");
  std::vector<StepSample> out;
  for (int i = 0; i < rows; ++i) {
    SyntheticStep s = random_step(rng, i % 3);
    const double ms = step_ms(model, s.batch) * (1.0 + noise * normal(rng));
    out.push_back({std::move(s.batch), ms, i + 2, "step"});
  }
  return out;
}

// The truth the roofline tests recover: A100-80GB-SXM, Llama-3.1-8B, efficiencies 0.6 / 0.7,
// overhead 2 ms.
RooflineCostModel truth_roofline() {
  return RooflineCostModel(find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1, 0.6, 0.7, 2.0,
                           0.0);
}

FittedCoefficients truth_fitted() {
  FittedCoefficients c;
  c.prefill_a_ms = 3.0;
  c.prefill_b_ms_per_token = 0.06;
  c.prefill_c_ms_per_token2 = 1.2e-6;
  c.decode_a_ms = 10.0;
  c.decode_b_ms_per_ctx_token = 8e-5;
  c.decode_c_ms_per_seq = 0.02;
  return c;
}

CalibrationOptions roofline_options() {
  CalibrationOptions o;
  o.form = "roofline";
  o.target.gpu = "A100-80GB-SXM";
  o.target.model = "Llama-3.1-8B";
  return o;
}

CalibrationOptions fitted_options() {
  CalibrationOptions o;
  o.form = "fitted";
  return o;
}

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
  const RooflineCostModel slow(find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1, 0.3, 0.95,
                               0.5, 0.0);
  const CalibrationResult r = calibrate(synthetic_steps(slow, 300, 0.01, 3), roofline_options());
  EXPECT_NEAR(r.param("compute_efficiency"), 0.3, 0.3 * 0.02);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.95, 0.95 * 0.02);
  EXPECT_TRUE(r.settled);
  EXPECT_GT(r.iterations, 1);
}

TEST(Calibration, RooflineWithTensorParallelismSubtractsTheAllReduce) {
  const RooflineCostModel tp2(find_gpu("H100-SXM"), find_model("Llama-3.1-70B"), 2, 0.65, 0.75, 1.0,
                              0.0);
  CalibrationOptions o = roofline_options();
  o.target.gpu = "H100-SXM";
  o.target.model = "Llama-3.1-70B";
  o.target.tp = 2;
  const CalibrationResult r = calibrate(synthetic_steps(tp2, 300, 0.0, 4), o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.65, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  EXPECT_NEAR(r.param("step_overhead_ms"), 1.0, 1e-4);
}

TEST(Calibration, RooflineOfADequantizingModelHoldsItsGemmFactor) {
  // FP8 weights on an A100 (no FP8 tensor cores): the linear layers run at factor x efficiency.
  const RooflineCostModel fp8(find_gpu("A100-80GB-PCIe"), find_model("Qwen3-32B-FP8"), 1, 0.7, 0.75,
                              1.5, 0.0, 2, 0.5);
  CalibrationOptions o = roofline_options();
  o.target.gpu = "A100-80GB-PCIe";
  o.target.model = "Qwen3-32B-FP8";
  o.target.dequant_gemm_factor = 0.5;
  const CalibrationResult r = calibrate(synthetic_steps(fp8, 150, 0.0, 16), o);
  EXPECT_NEAR(r.param("compute_efficiency"), 0.7, 1e-6);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.75, 1e-6);
  ASSERT_EQ(r.settings.size(), 1u);
  EXPECT_EQ(r.settings[0].first, "dequant_gemm_factor");
  EXPECT_NE(calibration_yaml(r).find("  dequant_gemm_factor: 0.5\n"), std::string::npos);
  // A BF16 model has no such setting.
  EXPECT_TRUE(calibrate(synthetic_steps(truth_roofline(), 60, 0.0, 17), roofline_options())
                  .settings.empty());
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
  const RooflineCostModel none(find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1, 0.6, 0.7,
                               0.0, 0.0);
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
  const RooflineCostModel h100(find_gpu("H100-SXM"), find_model("Llama-3.1-8B"), 1, 0.6, 0.7, 2.0,
                               0.0);
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

// ---------------------------------------------------------------------------------------------
// The measurements file.

TEST(CalibrationCsv, BatchEntries) {
  const auto b = parse_batch("512:0; 3x1:2000;7");
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].new_tokens, 512);
  EXPECT_EQ(b[0].context_tokens, 0);
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(b[i].new_tokens, 1);
    EXPECT_EQ(b[i].context_tokens, 2000);
  }
  EXPECT_EQ(b[4].new_tokens, 7);
  EXPECT_EQ(b[4].context_tokens, 0);
  for (const char* bad : {"", "0:5", "abc", "1:-3", "0x1:5", "2x:5", "1:2:3", "1.5:2"}) {
    EXPECT_THROW(parse_batch(bad), std::invalid_argument) << bad;
  }
}

TEST(CalibrationCsv, StepRowsWithCommentsQuotesAndExtraColumns) {
  const Measurements m = parse_measurements(
      "# measured on my A100\r\n"
      "time_s,step_ms,batch\r\n"
      "0.1,12.5,\"1:100;1:200\"\r\n"
      "\n"
      "0.2, 80 ,2048\n",
      "m.csv");
  EXPECT_EQ(m.layout, "steps");
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(m.steps[0].step_ms, 12.5);
  EXPECT_EQ(m.steps[0].batch.size(), 2u);
  EXPECT_EQ(m.steps[0].line, 3);
  EXPECT_EQ(m.steps[1].batch[0].new_tokens, 2048);
  EXPECT_EQ(m.steps[1].line, 5);
  EXPECT_EQ(m.ignored_columns, std::vector<std::string>{"time_s"});
}

TEST(CalibrationCsv, RequestRowsBecomeAPrefillAndAMeanDecode) {
  const Measurements m = parse_measurements(
      "prompt_tokens,cached_tokens,ttft_ms,tpot_ms,output_tokens\n"
      "1000,200,90.5,12.25,101\n"
      "500,,40,,\n"
      "300,0,,11,2\n",
      "r.csv");
  EXPECT_EQ(m.layout, "requests");
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.steps[0].origin, "ttft");
  EXPECT_EQ(m.steps[0].batch[0].new_tokens, 800);
  EXPECT_EQ(m.steps[0].batch[0].context_tokens, 200);
  EXPECT_DOUBLE_EQ(m.steps[0].step_ms, 90.5);
  // Decode steps k = 1..100 read 1000 + k - 1 context tokens: 1049.5 on average.
  EXPECT_EQ(m.steps[1].origin, "tpot");
  EXPECT_EQ(m.steps[1].batch[0].new_tokens, 1);
  EXPECT_EQ(m.steps[1].batch[0].context_tokens, 1050);
  EXPECT_EQ(m.steps[2].batch[0].new_tokens, 500);
  EXPECT_EQ(m.steps[3].batch[0].context_tokens, 300);
}

std::string csv_error(const std::string& text) {
  try {
    parse_measurements(text, "m.csv");
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationCsv, BadInputNamesFileLineColumnAndExpectation) {
  EXPECT_EQ(csv_error("step_ms,batch\n1,1:2\nabc,1:2\n"),
            "m.csv:3: column 'step_ms': expected a step duration in ms, a number > 0, got 'abc'");
  EXPECT_EQ(csv_error("step_ms,batch\n-4,1:2\n"),
            "m.csv:2: column 'step_ms': expected a step duration in ms, a number > 0, got '-4'");
  EXPECT_NE(csv_error("step_ms,batch\n4,1:x\n").find("m.csv:2: column 'batch': entry '1:x'"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n4,\n").find("m.csv:2: column 'batch': expected the step's"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms\n4\n").find("m.csv:1: missing column 'batch'"), std::string::npos);
  EXPECT_NE(csv_error("time,tokens\n4,5\n").find("m.csv:1: missing column(s) step_ms, batch"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n4,1:2,7\n").find("m.csv:2: expected 2 cells"),
            std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n\"4,1:2\n").find("m.csv:2: a double quote is not closed"),
            std::string::npos);
  EXPECT_NE(csv_error("# nothing\n").find("m.csv: empty measurements file"), std::string::npos);
  EXPECT_NE(csv_error("step_ms,batch\n").find("no measurements"), std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,tpot_ms\n5,3\n").find("missing column 'output_tokens'"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,cached_tokens,ttft_ms\n5,5,3\n")
                .find("m.csv:2: column 'cached_tokens': expected an integer in [0, "
                      "prompt_tokens - 1] = [0, 4], got '5'"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,ttft_ms,tpot_ms,output_tokens\n5,,,\n")
                .find("a row needs ttft_ms or tpot_ms"),
            std::string::npos);
  EXPECT_NE(csv_error("prompt_tokens,tpot_ms,output_tokens\n5,3,1\n")
                .find("column 'output_tokens': expected the output length in tokens, an integer "
                      ">= 2, got '1'"),
            std::string::npos);
  EXPECT_THROW(read_measurements("/no/such/measurements.csv"), TraceError);
}

// ---------------------------------------------------------------------------------------------
// The calibration file.

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CalibrationFile, RoundTripsThroughTheCostModelSpec) {
  const CalibrationResult r =
      calibrate(synthetic_steps(truth_roofline(), 120, 0.02, 13), roofline_options(), "m.csv");
  const std::string yaml = calibration_yaml(r);
  EXPECT_NE(yaml.find("cost_model:\n  type: roofline\n  compute_efficiency: "), std::string::npos)
      << yaml;
  EXPECT_EQ(yaml, calibration_yaml(r));  // deterministic
  const CalibrationFile f = read_calibration_file(write_temp("roofline.yaml", yaml));
  EXPECT_EQ(f.form, "roofline");
  EXPECT_EQ(f.gpu, "A100-80GB-SXM");
  EXPECT_EQ(f.model, "Llama-3.1-8B");
  EXPECT_EQ(f.tp, 1);
  EXPECT_EQ(f.cost_model.get_string("type"), "roofline");
  for (const char* name : {"compute_efficiency", "bandwidth_efficiency", "step_overhead_ms"}) {
    EXPECT_NEAR(f.cost_model.get_double(name), r.param(name), 1e-5 * r.param(name)) << name;
  }
  // Untouched parameters keep their defaults.
  EXPECT_EQ(f.cost_model.get_double("prefill_a_ms"),
            cost_model_spec().defaults().get_double("prefill_a_ms"));

  const CalibrationResult fr =
      calibrate(synthetic_steps(FittedCostModel(truth_fitted()), 60, 0.0, 14), fitted_options());
  const CalibrationFile ff = read_calibration_file(write_temp("fitted.yaml", calibration_yaml(fr)));
  EXPECT_EQ(ff.cost_model.get_string("type"), "fitted");
  EXPECT_NEAR(ff.cost_model.get_double("decode_c_ms_per_seq"), 0.02, 1e-6);
  EXPECT_EQ(ff.gpu, "");
}

TEST(CalibrationFile, TableAndJsonShowEveryParameter) {
  const CalibrationResult r =
      calibrate(synthetic_steps(truth_roofline(), 60, 0.01, 15), roofline_options(), "m.csv");
  const std::string table = calibration_table(r);
  EXPECT_NE(table.find("calibration: roofline form, Llama-3.1-8B on A100-80GB-SXM x1"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("compute_efficiency"), std::string::npos);
  EXPECT_NE(table.find("memory_bound"), std::string::npos);
  const nlohmann::json j = calibration_json(r);
  EXPECT_EQ(j["cost_model"]["type"], "roofline");
  EXPECT_DOUBLE_EQ(j["params"]["compute_efficiency"]["value"].get<double>(),
                   r.param("compute_efficiency"));
  EXPECT_EQ(j["quality"][0]["rows"], 60);
}

std::string file_error(const std::string& name, const std::string& text) {
  try {
    read_calibration_file(write_temp(name, text));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(CalibrationFile, BadFilesNameFileLineAndField) {
  EXPECT_NE(file_error("a.yaml", "cost_model:\n  type: roofline\n  compute_efficiency: 2\n")
                .find("a.yaml:3: cost_model.compute_efficiency: expected float in [0.01, 1], "
                      "got '2'"),
            std::string::npos);
  EXPECT_NE(file_error("b.yaml", "fit: {}\n").find("missing field 'cost_model'"),
            std::string::npos);
  EXPECT_NE(file_error("c.yaml", "cost_model: {}\nextra: 1\n")
                .find("c.yaml:2: extra: unknown field; valid fields: cost_model, fit"),
            std::string::npos);
  EXPECT_NE(file_error("d.yaml", "cost_model: {calibration: e.yaml}\n")
                .find("cannot reference another calibration file"),
            std::string::npos);
  EXPECT_NE(file_error("e.yaml", "cost_model: {speed: 3}\n")
                .find("cost_model.speed: unknown parameter; valid parameters: type"),
            std::string::npos);
  EXPECT_NE(file_error("f.yaml", "cost_model: [1\n").find("invalid YAML"), std::string::npos);
  EXPECT_THROW(read_calibration_file("/no/such/calibration.yaml"), ScenarioError);
}

// ---------------------------------------------------------------------------------------------
// The committed examples (examples/calibration/) are this generator's output. After an intended
// change to the cost model, regenerate them with
//   FLEETSIM_REGEN_EXAMPLES=1 <build>/models/models_test --gtest_filter='CalibrationExample.*'
// and rerun `fleetsim calibrate` on them for docs/calibration.md.

std::string fmt_ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", v);
  return buf;
}

std::string example_steps_csv() {
  const RooflineCostModel model = truth_roofline();
  Rng rng = make_rng(2025, "calibration-example-steps");
  std::ostringstream os;
  os << "# Synthetic step timings: fleetsim's roofline for Llama-3.1-8B on an A100-80GB-SXM with\n"
     << "# compute_efficiency 0.6, bandwidth_efficiency 0.7, step_overhead_ms 2.0, times 2%\n"
     << "# Gaussian noise. Written by models/calibration_test.cc (CalibrationExample).\n"
     << "step_ms,batch\n";
  for (int i = 0; i < 150; ++i) {
    const SyntheticStep s = random_step(rng, i % 3);
    const double ms = model.breakdown(s.batch).total_ms * (1.0 + 0.02 * normal(rng));
    std::string batch;
    for (const auto& g : s.groups) {
      if (!batch.empty()) batch += ';';
      if (g.count > 1) batch += std::to_string(g.count) + "x";
      batch += std::to_string(g.new_tokens) + ":" + std::to_string(g.context);
    }
    os << fmt_ms(ms) << "," << batch << "\n";
  }
  return os.str();
}

std::string example_requests_csv() {
  const RooflineCostModel model = truth_roofline();
  Rng rng = make_rng(2025, "calibration-example-requests");
  std::ostringstream os;
  os << "# Synthetic single-stream request timings (one request at a time, engine time only): "
        "the\n"
     << "# same roofline as a100-llama-3.1-8b-steps.csv, times 2% Gaussian noise. Written by\n"
     << "# models/calibration_test.cc (CalibrationExample).\n"
     << "prompt_tokens,cached_tokens,ttft_ms,tpot_ms,output_tokens\n";
  for (int i = 0; i < 40; ++i) {
    const int prompt = log_uniform_int(rng, 64, 8192);
    const int cached = uniform(rng) < 0.3 ? 16 * (uniform_int(rng, 0, prompt - 1) / 16) : 0;
    const int output = uniform_int(rng, 16, 512);
    const std::vector<BatchEntry> prefill = {{prompt - cached, cached}};
    const double ttft = model.breakdown(prefill).total_ms * (1.0 + 0.02 * normal(rng));
    double decode = 0;
    for (int k = 1; k < output; ++k) {
      const std::vector<BatchEntry> step = {{1, prompt + k - 1}};
      decode += model.breakdown(step).total_ms;
    }
    const double tpot = decode / (output - 1) * (1.0 + 0.02 * normal(rng));
    os << prompt << "," << cached << "," << fmt_ms(ttft) << "," << fmt_ms(tpot) << "," << output
       << "\n";
  }
  return os.str();
}

void check_example(const std::string& rel, const std::string& text) {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/" + rel;
  const char* regen = std::getenv("FLEETSIM_REGEN_EXAMPLES");
  if (regen != nullptr && std::string(regen) == "1") {
    std::ofstream(path) << text;
    GTEST_SKIP() << "wrote " << path;
  }
  // Numbers, not bytes: a libm one ulp off elsewhere must not fail the test.
  const Measurements want = read_measurements(path);
  const Measurements got = parse_measurements(text, rel);
  ASSERT_EQ(got.steps.size(), want.steps.size()) << "regenerate " << rel;
  for (size_t i = 0; i < got.steps.size(); ++i) {
    EXPECT_NEAR(got.steps[i].step_ms, want.steps[i].step_ms, 2e-3) << rel << " row " << i;
    ASSERT_EQ(got.steps[i].batch.size(), want.steps[i].batch.size()) << rel << " row " << i;
  }
}

TEST(CalibrationExample, StepsCsvIsTheGeneratorsOutput) {
  check_example("examples/calibration/a100-llama-3.1-8b-steps.csv", example_steps_csv());
}

TEST(CalibrationExample, RequestsCsvIsTheGeneratorsOutput) {
  check_example("examples/calibration/a100-llama-3.1-8b-requests.csv", example_requests_csv());
}

TEST(CalibrationExample, RequestsRecoverTheRooflineTheyCameFrom) {
  const Measurements m = parse_measurements(example_requests_csv(), "requests.csv");
  const CalibrationResult r = calibrate(m.steps, roofline_options());
  EXPECT_NEAR(r.param("compute_efficiency"), 0.6, 0.6 * 0.05);
  EXPECT_NEAR(r.param("bandwidth_efficiency"), 0.7, 0.7 * 0.05);
}

}  // namespace
}  // namespace fleetsim
