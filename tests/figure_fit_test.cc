// `fleetsim calibrate --against`: cost-model constants fitted to measured figures by simulating
// them. The figures here are the simulator's own at known constants, so the fit must find those.
#include "sim/fleet/figure_fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "models/calibration.h"
#include "sim/errors.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

// One A100 serving a burst (prefill-bound figures) and two clients (decode-bound ones).
constexpr const char* kFleet = R"(name: fit-me
seed: 3
fleet: {pods: 1, gpu: A100-80GB-SXM, model: Llama-3.1-8B}
gateway: {request_timeout_s: 0}
arms:
  - {name: vllm, policy: round_robin}
)";
constexpr const char* kBurst = R"(workload:
  type: open_loop
  arrival: constant
  rate: 1000000
  max_requests: 60
  prompt_tokens: 1500
  output_tokens: 40
)";
constexpr const char* kStreams = R"(workload:
  type: concurrency_streams
  streams: 2
  duration_s: 0
  max_requests: 12
  question_tokens: 300
  answer_tokens: 120
)";

// What fit_to_figures throws as E for `o`; a test failure when it runs through.
template <class E>
std::string error_of(const FigureFitOptions& o) {
  try {
    fit_to_figures(o);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

class FigureFit : public testing::TempDirTest {
 protected:
  FigureFit() : TempDirTest("fleetsim-figure-fit-") {}

  // The checks' file with `measured` in the order of the figures below; 1s as placeholders.
  std::string checks(const std::vector<double>& measured = {}) {
    const std::string burst =
        testing::write_file(dir_ / "burst.yaml", std::string(kFleet) + kBurst);
    const std::string streams =
        testing::write_file(dir_ / "streams.yaml", std::string(kFleet) + kStreams);
    const std::vector<std::pair<std::string, std::vector<std::string>>> checks = {
        {burst, {"throughput_req_s", "ttft_mean_ms", "tpot_mean_ms"}},
        {streams, {"ttft_mean_ms", "tpot_mean_ms"}}};
    std::string text = "checks:\n";
    size_t i = 0;
    for (const auto& [scenario, metrics] : checks) {
      text += "  - scenario: " + scenario + "\n    figures:\n";
      for (const auto& metric : metrics) {
        const double m = measured.empty() ? 1 : measured[i++];
        text += "      - {arm: vllm, metric: " + metric + ", measured: " + std::to_string(m) +
                ", rel: 0.1}\n";
      }
    }
    return testing::write_file(dir_ / "checks.yaml", text);
  }

  // The file with the simulator's own figures at the given constants as the measurements,
  // each off by `noise` (a fraction) with alternating signs, as a real run's would be.
  std::string measured_at(const std::vector<std::string>& constants, double noise = 0) {
    const ValidationReport truth = validate({checks()}, 1, 1, constants);
    std::vector<double> m;
    for (const auto& f : truth.figures) {
      m.push_back(f.simulated * (1 + (m.size() % 2 == 0 ? noise : -noise)));
    }
    return checks(m);
  }
};

TEST_F(FigureFit, FindsTheConstantsItsFiguresWereSimulatedWith) {
  FigureFitOptions o;
  o.files = {measured_at(
      {"fleet.cost_model.compute_efficiency=0.5", "fleet.cost_model.bandwidth_efficiency=0.65"})};
  o.threads = 1;
  const FigureFitResult r = fit_to_figures(o);
  ASSERT_EQ(r.params.size(), 2u);
  EXPECT_EQ(r.params[0].name, "compute_efficiency");
  EXPECT_DOUBLE_EQ(r.params[0].start, 0.73);
  EXPECT_DOUBLE_EQ(r.params[1].start, 0.78);  // the A100's own measured bandwidth efficiency
  EXPECT_NEAR(r.params[0].value, 0.5, 0.5 * 0.03);
  EXPECT_NEAR(r.params[1].value, 0.65, 0.65 * 0.03);
  EXPECT_GT(r.params[0].std_error, 0);
  EXPECT_EQ(r.fitted_figures, 5);
  EXPECT_EQ(r.gpu, "A100-80GB-SXM");
  EXPECT_GT(r.rms_before, 1.0);  // the defaults are off by more than the 10% tolerance
  EXPECT_LT(r.rms_after, 0.1);
  EXPECT_TRUE(r.after.all_ok());
  EXPECT_FALSE(r.before.all_ok());
  EXPECT_LE(r.evaluations, 100);

  // The calibration file carries the values, and a scenario reads them back.
  const std::string file = testing::write_file(dir_ / "cal.yaml", figure_fit_yaml(r));
  const CalibrationFile back = read_calibration_file(file);
  EXPECT_NEAR(back.cost_model.get_double("compute_efficiency"), r.params[0].value, 1e-5);
  EXPECT_NEAR(back.cost_model.get_double("bandwidth_efficiency"), r.params[1].value, 1e-5);
  EXPECT_EQ(back.form, "figures");
  EXPECT_EQ(back.gpu, "A100-80GB-SXM");
  EXPECT_EQ(figure_fit_json(r)["cost_model"]["compute_efficiency"], r.params[0].value);

  // Deterministic, at any thread count.
  o.threads = 2;
  EXPECT_EQ(figure_fit_yaml(fit_to_figures(o)), figure_fit_yaml(r));
}

TEST_F(FigureFit, FindsThemThroughMeasurementNoise) {
  FigureFitOptions o;
  o.files = {measured_at(
      {"fleet.cost_model.compute_efficiency=0.5", "fleet.cost_model.bandwidth_efficiency=0.65"},
      0.04)};
  o.threads = 1;
  const FigureFitResult r = fit_to_figures(o);
  for (const auto& [p, truth] : {std::pair{r.params[0], 0.5}, std::pair{r.params[1], 0.65}}) {
    EXPECT_NEAR(p.value, truth, truth * 0.08) << p.name;
    // The noise shows in the standard error, which covers the truth.
    EXPECT_GT(p.std_error, 0) << p.name;
    EXPECT_LE(std::fabs(p.value - truth), 3 * p.std_error) << p.name;
  }
  EXPECT_GT(r.rms_after, 0.1);  // 4% noise against 10% tolerances
  EXPECT_TRUE(r.after.all_ok());
}

TEST_F(FigureFit, StartsWhereASetSaysAndHoldsTheOtherConstantsItSets) {
  FigureFitOptions o;
  o.files = {measured_at(
      {"fleet.cost_model.compute_efficiency=0.5", "fleet.cost_model.step_overhead_ms=3"})};
  o.fit = {"compute_efficiency"};
  o.sets = {"fleet.cost_model.compute_efficiency=0.9", "fleet.cost_model.step_overhead_ms=3"};
  o.threads = 1;
  const FigureFitResult r = fit_to_figures(o);
  EXPECT_DOUBLE_EQ(r.params[0].start, 0.9);
  EXPECT_NEAR(r.params[0].value, 0.5, 0.5 * 0.03);
  // The held value joins the file; the fitted one's start does not stay among the sets.
  EXPECT_EQ(r.sets, std::vector<std::string>{"fleet.cost_model.step_overhead_ms=3"});
  const CalibrationFile back =
      read_calibration_file(testing::write_file(dir_ / "cal.yaml", figure_fit_yaml(r)));
  EXPECT_DOUBLE_EQ(back.cost_model.get_double("step_overhead_ms"), 3);
}

TEST_F(FigureFit, SaysWhenTheFiguresDoNotPinAConstant) {
  FigureFitOptions o;
  o.files = {measured_at({"fleet.cost_model.compute_efficiency=0.5"})};
  o.fit = {"compute_efficiency", "moe_gemm_factor"};  // a dense model has no experts
  o.threads = 1;
  const FigureFitResult r = fit_to_figures(o);
  EXPECT_NEAR(r.params[0].value, 0.5, 0.5 * 0.03);
  EXPECT_DOUBLE_EQ(r.params[1].value, r.params[1].start);
  EXPECT_TRUE(std::isnan(r.params[1].std_error));
  EXPECT_NE(figure_fit_table(r).find("unpinned"), std::string::npos);
}

TEST_F(FigureFit, RefusesWhatItCannotFit) {
  FigureFitOptions o;
  o.files = {checks()};
  o.fit = {"compute_efficency"};
  EXPECT_NE(error_of<UnknownNameError>(o).find("compute_efficiency"), std::string::npos);
  o.fit = {"type"};  // a cost_model parameter, but not a number
  EXPECT_THROW(fit_to_figures(o), UnknownNameError);
  o.fit = {"compute_efficiency", "compute_efficiency"};
  EXPECT_THROW(fit_to_figures(o), Error);
  o.fit = {"allreduce_latency_us"};  // 0 = the path's own: no start for a fit in proportions
  EXPECT_NE(error_of<Error>(o).find("--set fleet.cost_model.allreduce_latency_us="),
            std::string::npos);
  o.fit = {"compute_efficiency"};
  o.sets = {"fleet.cost_model.compute_efficiency=-1"};
  EXPECT_THROW(fit_to_figures(o), Error);
  o.sets = {"fleet.cost_model.calibration=other.yaml"};  // the fit writes its own file
  EXPECT_THROW(fit_to_figures(o), Error);
  o.sets = {"fleet.cost_model.type=fitted"};
  EXPECT_THROW(fit_to_figures(o), Error);
  o.sets = {};
  o.max_evaluations = 0;
  EXPECT_THROW(fit_to_figures(o), Error);

  // More constants than figures.
  const std::string scenario = testing::write_file(dir_ / "one.yaml", std::string(kFleet) + kBurst);
  const std::string one = testing::write_file(
      dir_ / "one-figure.yaml", "checks:\n  - scenario: " + scenario +
                                    "\n    figures:\n      - {arm: vllm, metric: ttft_mean_ms, "
                                    "measured: 900, rel: 0.3}\n");
  FigureFitOptions two;
  two.files = {one};
  two.fit = {"compute_efficiency", "bandwidth_efficiency"};
  EXPECT_NE(error_of<Error>(two).find("1 figure(s) with a tolerance to fit cannot pin 2"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetsim
