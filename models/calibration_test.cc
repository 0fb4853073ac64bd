#include "models/calibration.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/calibration_test_util.h"
#include "sim/rng.h"

namespace fleetsim {
namespace {

using testing::log_uniform_int;
using testing::normal;
using testing::random_step;
using testing::roofline_options;
using testing::SyntheticStep;
using testing::truth_roofline;
using testing::uniform;
using testing::uniform_int;

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
