#include "models/calibration.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "models/calibration_test_util.h"
#include "models/trace_test_util.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

using testing::fitted_options;
using testing::roofline_options;
using testing::synthetic_steps;
using testing::truth_fitted;
using testing::truth_roofline;

using testing::write_temp;

std::string file_error(const std::string& name, const std::string& text) {
  try {
    read_calibration_file(write_temp(name, text));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
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
  EXPECT_EQ(f.revision, kRooflineRevision);  // the roofline it was fitted against
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
  EXPECT_EQ(ff.revision, 0);  // a fitted form's coefficients owe nothing to the roofline
}

TEST(CalibrationFile, AFileFittedAgainstAnEarlierRooflineIsToldApart) {
  // Before the stamp: revision 2's files held the element-wise efficiency, earlier ones not.
  const std::string before = "cost_model:\n  type: roofline\n  compute_efficiency: 0.6\n";
  const std::string fit = "fit:\n  form: roofline\n";
  EXPECT_EQ(read_calibration_file(write_temp("r1.yaml", before + fit)).revision, 1);
  EXPECT_EQ(read_calibration_file(
                write_temp("r2.yaml", before + "  elementwise_efficiency: 0.48\n" + fit))
                .revision,
            2);
  EXPECT_EQ(
      read_calibration_file(write_temp("r3.yaml", before + fit + "  cost_model_revision: 3\n"))
          .revision,
      3);
  EXPECT_EQ(read_calibration_file(write_temp("none.yaml", before)).revision, 0);  // hand-written
  EXPECT_NE(roofline_changes_since(1).find("element-wise kernels"), std::string::npos);
  EXPECT_EQ(roofline_changes_since(2).find("element-wise kernels"), std::string::npos);
  EXPECT_NE(roofline_changes_since(2).find("query and key norms"), std::string::npos);
  EXPECT_EQ(roofline_changes_since(kRooflineRevision), "");
  // Revision 3 changed only what models with query and key norms, or latent ones, pay.
  EXPECT_EQ(roofline_changes_since(2, &find_model("Llama-3.1-8B")), "");
  EXPECT_NE(roofline_changes_since(2, &find_model("Qwen3-8B")), "");
  EXPECT_NE(roofline_changes_since(2, &find_model("DeepSeek-V3")), "");
  EXPECT_NE(roofline_changes_since(1, &find_model("Llama-3.1-8B")), "");
  // Revision 4 changed only what a mixture of experts pays.
  EXPECT_EQ(roofline_changes_since(3, &find_model("Qwen3-8B")), "");
  EXPECT_NE(roofline_changes_since(3, &find_model("gpt-oss-20b")).find("moe_gemm_factor"),
            std::string::npos);
  EXPECT_NE(file_error("r0.yaml", before + fit + "  cost_model_revision: 0\n")
                .find("r0.yaml:6: fit.cost_model_revision: expected an integer >= 1"),
            std::string::npos)
      << file_error("r0.yaml", before + fit + "  cost_model_revision: 0\n");
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

}  // namespace
}  // namespace fleetsim
