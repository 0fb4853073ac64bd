// Checks the roofline's default efficiencies against measured per-operator timings: Vidur's
// profiles (microsoft/vidur data/profiling/compute, copied under shared/data/profiles) of one
// transformer layer's linear operators on an A100 (Meta-Llama-3-8B) and an H100 (Llama-2-7b-hf).
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/cost_model.h"
#include "models/gpu_catalog.h"

namespace fleetsim {
namespace {

// The linear operators of one layer: fused QKV, output projection, fused gate/up, down.
const char* const kLinearOps[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj",
                                  "mlp_down_proj"};

struct LayerTiming {
  double tokens = 0;
  double linear_ms = 0;  // sum of the medians of the linear operators
};

struct Profile {
  double params_per_layer = 0;  // weights of the linear operators, from the CSV's shape columns
  std::vector<LayerTiming> rows;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

Profile read_profile(const std::string& relative) {
  const std::string path = std::string(FLEETSIM_SHARED_DIR) + "/data/profiles/" + relative;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  Profile p;
  std::string line;
  if (!std::getline(in, line)) return p;
  std::map<std::string, std::size_t> col;
  const auto header = split(line);
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() != header.size()) continue;
    auto num = [&](const std::string& name) { return std::stod(cells.at(col.at(name))); };
    if (num("num_tensor_parallel_workers") != 1) continue;
    const double h = num("n_embd");
    const double heads = num("n_head");
    const double kv_heads = num("n_kv_head");
    const double ff = num("n_expanded_embd");
    const bool gated = cells.at(col.at("use_gated_mlp")) == "True";
    const double head_dim = h / heads;
    p.params_per_layer =
        h * (heads + 2 * kv_heads) * head_dim + heads * head_dim * h + (gated ? 3.0 : 2.0) * h * ff;
    LayerTiming t;
    t.tokens = num("num_tokens");
    for (const char* op : kLinearOps)
      t.linear_ms += num(std::string("time_stats.") + op + ".median");
    p.rows.push_back(t);
  }
  return p;
}

struct Achieved {
  double bandwidth_fraction = 0;         // at one token: BF16 weight bytes / time / peak bandwidth
  double compute_fraction = 0;           // mean over steps of >= 2048 tokens: FLOPs / time / peak
  double marginal_compute_fraction = 0;  // from the slope of a least-squares line, >= 2048
};

Achieved achieved(const Profile& p, const GpuSpec& gpu) {
  Achieved a;
  const double weight_bytes = 2.0 * p.params_per_layer;  // BF16
  std::vector<const LayerTiming*> large;
  double one_token_ms = 0;
  int one_token_rows = 0;
  for (const auto& r : p.rows) {
    if (r.tokens == 1) {
      one_token_ms += r.linear_ms;
      ++one_token_rows;
    }
    if (r.tokens >= 2048) large.push_back(&r);
  }
  EXPECT_GT(one_token_rows, 0);
  EXPECT_GE(large.size(), 2u);
  if (one_token_rows == 0 || large.size() < 2) return a;
  one_token_ms /= one_token_rows;
  a.bandwidth_fraction = weight_bytes / (one_token_ms * 1e-3) / (gpu.memory_bandwidth_gbs * 1e9);

  double sum = 0;
  for (const auto* r : large) {
    sum += 2.0 * p.params_per_layer * r->tokens / (r->linear_ms * 1e-3) / (gpu.bf16_tflops * 1e12);
  }
  a.compute_fraction = sum / static_cast<double>(large.size());

  // t = t0 + s x tokens: the slope s is the time of one more token, free of fixed costs.
  Eigen::MatrixXd design(static_cast<Eigen::Index>(large.size()), 2);
  Eigen::VectorXd time(static_cast<Eigen::Index>(large.size()));
  for (std::size_t i = 0; i < large.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    design(row, 0) = 1.0;
    design(row, 1) = large[i]->tokens;
    time(row) = large[i]->linear_ms;
  }
  const Eigen::VectorXd fit = design.colPivHouseholderQr().solve(time);
  const double seconds_per_token = fit(1) * 1e-3;
  a.marginal_compute_fraction =
      2.0 * p.params_per_layer / seconds_per_token / (gpu.bf16_tflops * 1e12);
  return a;
}

// "Within a few points" of the profile: one default serves every GPU.
constexpr double kTolerance = 0.04;

TEST(CostModelProfile, A100Llama3_8bMatchesTheDefaults) {
  const Profile p = read_profile("a100/Meta-Llama-3-8B/mlp.csv");
  ASSERT_FALSE(p.rows.empty());
  EXPECT_DOUBLE_EQ(p.params_per_layer, 218'103'808.0);  // 4096 x 6144 + 4096^2 + 3 x 4096 x 14336
  const Achieved a = achieved(p, find_gpu("A100-80GB-SXM"));
  // shared/data/README.md: about 1.58 TB/s (78% of 2,039 GB/s) and 72-74% of 312 TFLOP/s.
  EXPECT_NEAR(a.bandwidth_fraction, 0.775, 0.005);
  EXPECT_NEAR(a.compute_fraction, 0.72, 0.01);
  EXPECT_NEAR(a.bandwidth_fraction, kDefaultBandwidthEfficiency, kTolerance);
  EXPECT_NEAR(a.compute_fraction, kDefaultComputeEfficiency, kTolerance);
  EXPECT_NEAR(a.marginal_compute_fraction, kDefaultComputeEfficiency, kTolerance);
  std::cout << "A100 Llama-3-8B: bandwidth " << a.bandwidth_fraction << ", compute "
            << a.compute_fraction << " (marginal " << a.marginal_compute_fraction << ")\n";
}

TEST(CostModelProfile, H100Llama2_7bMatchesTheDefaults) {
  const Profile p = read_profile("h100/Llama-2-7b-hf/mlp.csv");
  ASSERT_FALSE(p.rows.empty());
  const Achieved a = achieved(p, find_gpu("H100-SXM"));
  EXPECT_NEAR(a.bandwidth_fraction, kDefaultBandwidthEfficiency, kTolerance);
  EXPECT_NEAR(a.compute_fraction, kDefaultComputeEfficiency, kTolerance);
  EXPECT_NEAR(a.marginal_compute_fraction, kDefaultComputeEfficiency, kTolerance);
  std::cout << "H100 Llama-2-7b: bandwidth " << a.bandwidth_fraction << ", compute "
            << a.compute_fraction << " (marginal " << a.marginal_compute_fraction << ")\n";
}

}  // namespace
}  // namespace fleetsim
