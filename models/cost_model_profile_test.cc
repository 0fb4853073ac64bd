// Refits the roofline's default constants from measured per-operator timings: Vidur's profiles
// (microsoft/vidur data/profiling/compute, copied under shared/data/profiles) of one transformer
// layer's linear operators against the number of tokens, on an A100 (four models) and an H100
// (two), each at tensor parallel 1, 2, 4 and 8.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "models/cost_model.h"
#include "models/gpu_catalog.h"

namespace fleetsim {
namespace {

// The linear operators of one layer: fused QKV, output projection, fused gate/up, down.
const char* const kLinearOps[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj",
                                  "mlp_down_proj"};
// The element-wise operators Vidur times beside them: two RMSNorms, the rotary embedding, the
// gated activation and one residual add.
const char* const kElementwiseOps[] = {"input_layernorm", "post_attention_layernorm", "attn_rope",
                                       "mlp_act", "add"};

// One step size of one curve, with the roofline's two times at efficiency 1.
struct Step {
  double tokens = 0;
  double measured_ms = 0;              // sum of the linear operators' medians
  double compute_ms = 0;               // BF16 FLOPs at the GPU's peak
  double memory_ms = 0;                // BF16 weight bytes at the GPU's peak bandwidth
  double elementwise_measured_ms = 0;  // the element-wise operators' medians, summed
  double elementwise_ms = 0;           // their activation bytes at the GPU's peak bandwidth
};

struct Curve {
  std::string name;  // gpu/model at tp N
  std::vector<Step> steps;
};

std::vector<std::string> split(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Every tensor-parallel size of one profile file, one curve each; a step size timed more than
// once keeps the median of its rows.
std::vector<Curve> read_curves(const std::string& relative, const GpuSpec& gpu) {
  const std::string path = std::string(FLEETSIM_SHARED_DIR) + "/data/profiles/" + relative;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::string line;
  if (!std::getline(in, line)) return {};
  std::map<std::string, std::size_t> col;
  const auto header = split(line);
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  std::map<int, std::map<double, std::vector<double>>> times;  // tp -> tokens -> ms
  std::map<int, std::map<double, std::vector<double>>> elementwise;
  std::map<int, double> params;            // tp -> linear weights per GPU
  std::map<int, double> activation_bytes;  // tp -> element-wise bytes per token per GPU
  while (std::getline(in, line)) {
    const auto cells = split(line);
    if (cells.size() != header.size()) continue;
    auto num = [&](const std::string& name) { return std::stod(cells.at(col.at(name))); };
    const int tp = static_cast<int>(num("num_tensor_parallel_workers"));
    const double h = num("n_embd");
    const double heads = num("n_head");
    const double kv_heads = num("n_kv_head");
    const double ff = num("n_expanded_embd");
    const bool gated = cells.at(col.at("use_gated_mlp")) == "True";
    const double head_dim = h / heads;
    params[tp] = (h * (heads + 2 * kv_heads) * head_dim + heads * head_dim * h +
                  (gated ? 3.0 : 2.0) * h * ff) /
                 tp;
    // BF16, read and written once: each norm its hidden row, the add two rows in and one out,
    // the rotary embedding this rank's query and key heads, the activation its gate and up
    // halves in and their product out.
    activation_bytes[tp] =
        2.0 * (2 * 2 * h + 3 * h + 2 * (heads + kv_heads) * head_dim / tp + 3 * ff / tp);
    double ms = 0;
    for (const char* op : kLinearOps) ms += num(std::string("time_stats.") + op + ".median");
    times[tp][num("num_tokens")].push_back(ms);
    double ew = 0;
    for (const char* op : kElementwiseOps) ew += num(std::string("time_stats.") + op + ".median");
    elementwise[tp][num("num_tokens")].push_back(ew);
  }
  std::vector<Curve> curves;
  for (auto& [tp, by_tokens] : times) {
    Curve c{relative.substr(0, relative.rfind('/')) + " tp" + std::to_string(tp), {}};
    for (auto& [tokens, ms] : by_tokens) {
      const double p = params[tp];
      c.steps.push_back({tokens, median(ms), 2.0 * p * tokens / (gpu.bf16_tflops * 1e12) * 1e3,
                         2.0 * p / (gpu.memory_bandwidth_gbs * 1e9) * 1e3,
                         median(elementwise[tp][tokens]),
                         activation_bytes[tp] * tokens / (gpu.memory_bandwidth_gbs * 1e9) * 1e3});
    }
    curves.push_back(std::move(c));
  }
  return curves;
}

const std::vector<Curve>& all_curves() {
  static const std::vector<Curve> kCurves = [] {
    std::vector<Curve> out;
    const GpuSpec a100 = find_gpu("A100-80GB-SXM");  // Vidur's A100s are the 80 GB SXM part
    const GpuSpec h100 = find_gpu("H100-SXM");
    for (const char* m :
         {"Llama-2-70b-hf", "Llama-2-7b-hf", "Meta-Llama-3-70B", "Meta-Llama-3-8B"}) {
      for (auto& c : read_curves(std::string("a100/") + m + "/mlp.csv", a100)) {
        out.push_back(std::move(c));
      }
    }
    for (const char* m : {"Llama-2-70b-hf", "Llama-2-7b-hf"}) {
      for (auto& c : read_curves(std::string("h100/") + m + "/mlp.csv", h100)) {
        out.push_back(std::move(c));
      }
    }
    return out;
  }();
  return kCurves;
}

struct Shape {
  double compute_efficiency = kDefaultComputeEfficiency;
  double bandwidth_efficiency = kDefaultBandwidthEfficiency;
  double unoverlapped_fraction = kDefaultUnoverlappedFraction;
  double kernel_floor_us = kDefaultKernelFloorUs;
};

// A linear-layer step as the roofline times it (one layer: four kernels).
double predicted_ms(const Step& s, const Shape& k) {
  const double c = s.compute_ms / k.compute_efficiency;
  const double m = s.memory_ms / k.bandwidth_efficiency + 4 * k.kernel_floor_us * 1e-3;
  return std::max(c, m) + k.unoverlapped_fraction * std::min(c, m);
}

double rms_log_error(const Curve& c, const Shape& k) {
  double sum = 0;
  for (const auto& s : c.steps) sum += std::pow(std::log(s.measured_ms / predicted_ms(s, k)), 2);
  return std::sqrt(sum / static_cast<double>(c.steps.size()));
}

// Least squares weighted so that every curve counts alike and every row by its relative error.
Eigen::VectorXd fit(const std::vector<std::vector<double>>& rows, const std::vector<double>& y,
                    const std::vector<double>& w) {
  const auto n = static_cast<Eigen::Index>(rows.size());
  const auto p = static_cast<Eigen::Index>(rows.front().size());
  Eigen::MatrixXd x(n, p);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double wi = w[static_cast<size_t>(i)];
    for (Eigen::Index j = 0; j < p; ++j) x(i, j) = wi * rows[static_cast<size_t>(i)][j];
    b(i) = wi * y[static_cast<size_t>(i)];
  }
  return x.colPivHouseholderQr().solve(b);
}

TEST(CostModelProfile, TheProfilesHoldTwentyFourCurves) {
  const auto& curves = all_curves();
  ASSERT_EQ(curves.size(), 24u);  // 6 files x TP 1, 2, 4, 8
  std::size_t steps = 0;
  for (const auto& c : curves) steps += c.steps.size();
  EXPECT_GT(steps, 7000u);
}

TEST(CostModelProfile, LargeStepsReachTheDefaultComputeEfficiency) {
  // Steps of 2,048 tokens and more at TP 1, where the weights' streaming is a few percent of the
  // arithmetic: FLOPs / time / peak, averaged.
  for (const char* name : {"a100/Meta-Llama-3-8B tp1", "h100/Llama-2-7b-hf tp1"}) {
    double sum = 0;
    int n = 0;
    for (const auto& c : all_curves()) {
      if (c.name != name) continue;
      for (const auto& s : c.steps) {
        if (s.tokens < 2048) continue;
        sum += s.compute_ms / s.measured_ms;
        ++n;
      }
    }
    ASSERT_GE(n, 2) << name;
    EXPECT_NEAR(sum / n, kDefaultComputeEfficiency, 0.02) << name;
    std::cout << name << ": compute " << sum / n << "\n";
  }
}

TEST(CostModelProfile, SmallStepsGiveTheBandwidthEfficiencyAndTheKernelFloor) {
  // Steps of 1 to 8 tokens on every curve: time = bytes / (efficiency x peak) + 4 x floor.
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& c : all_curves()) {
    std::vector<const Step*> small;
    for (const auto& s : c.steps) {
      if (s.tokens <= 8) small.push_back(&s);
    }
    for (const Step* s : small) {
      rows.push_back({s->memory_ms, 4e-3});
      y.push_back(s->measured_ms);
      w.push_back(1.0 / (s->measured_ms * std::sqrt(static_cast<double>(small.size()))));
    }
  }
  ASSERT_GT(rows.size(), 50u);
  const Eigen::VectorXd b = fit(rows, y, w);
  const double efficiency = 1.0 / b(0);
  const double floor_us = b(1);
  std::cout << "bandwidth efficiency " << efficiency << ", kernel floor " << floor_us << " us\n";
  EXPECT_NEAR(efficiency, kDefaultBandwidthEfficiency, 0.02);
  EXPECT_NEAR(floor_us, kDefaultKernelFloorUs, 0.7);
}

TEST(CostModelProfile, EachGpusOwnCurvesGiveItsBandwidthEfficiency) {
  // The same small steps, one GPU at a time, the kernel floor held: the A100's HBM2e and the
  // H100's HBM3 reach different fractions of their peaks, which the GPU catalog carries.
  for (const auto& [prefix, gpu] :
       {std::pair<std::string, std::string>{"a100", "A100-80GB-SXM"}, {"h100", "H100-SXM"}}) {
    std::vector<std::vector<double>> rows;
    std::vector<double> y, w;
    for (const auto& c : all_curves()) {
      if (c.name.rfind(prefix, 0) != 0) continue;
      std::vector<const Step*> small;
      for (const auto& s : c.steps) {
        if (s.tokens <= 8) small.push_back(&s);
      }
      for (const Step* s : small) {
        rows.push_back({s->memory_ms});
        y.push_back(s->measured_ms - 4 * kDefaultKernelFloorUs * 1e-3);
        w.push_back(1.0 / (s->measured_ms * std::sqrt(static_cast<double>(small.size()))));
      }
    }
    ASSERT_GT(rows.size(), 20u) << prefix;
    const double efficiency = 1.0 / fit(rows, y, w)(0);
    std::cout << gpu << ": bandwidth efficiency " << efficiency << "\n";
    EXPECT_NEAR(efficiency, find_gpu(gpu).bandwidth_efficiency, 0.01) << gpu;
  }
  // The parts that share a profiled part's memory system take its value; the rest none.
  EXPECT_EQ(find_gpu("A100-80GB-PCIe").bandwidth_efficiency,
            find_gpu("A100-80GB-SXM").bandwidth_efficiency);
  EXPECT_EQ(find_gpu("H200").bandwidth_efficiency, find_gpu("H100-SXM").bandwidth_efficiency);
  EXPECT_EQ(find_gpu("H100-NVL").bandwidth_efficiency, find_gpu("H100-SXM").bandwidth_efficiency);
  EXPECT_EQ(find_gpu("L40S").bandwidth_efficiency, 0.0);
  EXPECT_EQ(bandwidth_efficiency_for(find_gpu("L40S")), kDefaultBandwidthEfficiency);
  EXPECT_EQ(bandwidth_efficiency_for(find_gpu("H200"), 0.5), 0.5);
}

TEST(CostModelProfile, TheRidgeGivesTheUnoverlappedFraction) {
  // With the other three constants held, time - max(c, m) = fraction x min(c, m): one unknown,
  // fitted over every step of every curve.
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  Shape plain;
  plain.unoverlapped_fraction = 0;
  for (const auto& c : all_curves()) {
    for (const auto& s : c.steps) {
      const double m = s.memory_ms / plain.bandwidth_efficiency + 4 * plain.kernel_floor_us * 1e-3;
      rows.push_back({std::min(s.compute_ms / plain.compute_efficiency, m)});
      y.push_back(s.measured_ms - predicted_ms(s, plain));
      w.push_back(1.0 / (s.measured_ms * std::sqrt(static_cast<double>(c.steps.size()))));
    }
  }
  const double fraction = fit(rows, y, w)(0);
  std::cout << "unoverlapped fraction " << fraction << "\n";
  EXPECT_NEAR(fraction, kDefaultUnoverlappedFraction, 0.08);
}

TEST(CostModelProfile, TheDefaultsPredictEveryCurveBetterThanAPlainMax) {
  // The plain roofline these defaults replaced: max(compute, memory) at 0.73 and 0.78, no floor.
  const Shape plain{kDefaultComputeEfficiency, 0.78, 0.0, 0.0};
  const Shape now;
  double sum_now = 0, sum_plain = 0;
  std::size_t n = 0;
  for (const auto& c : all_curves()) {
    const double e_now = rms_log_error(c, now);
    const double e_plain = rms_log_error(c, plain);
    EXPECT_LT(e_now, e_plain) << c.name;
    EXPECT_LT(e_now, 0.2) << c.name;
    for (const auto& s : c.steps) {
      sum_now += std::pow(std::log(s.measured_ms / predicted_ms(s, now)), 2);
      sum_plain += std::pow(std::log(s.measured_ms / predicted_ms(s, plain)), 2);
      ++n;
    }
    std::cout << c.name << ": RMS log error " << e_now << " (plain max " << e_plain << ")\n";
  }
  const double rms_now = std::sqrt(sum_now / static_cast<double>(n));
  const double rms_plain = std::sqrt(sum_plain / static_cast<double>(n));
  std::cout << "all steps: " << rms_now << " (plain max " << rms_plain << ")\n";
  EXPECT_LT(rms_now, 0.10);
  EXPECT_LT(rms_now, 0.5 * rms_plain);
}

TEST(CostModelProfile, TheElementwiseKernelsGiveTheirEfficiency) {
  // Steps of 1,024 tokens and more, where the activations dwarf the kernels' launch: time =
  // bytes / (efficiency x peak), one unknown over every curve, each curve counting alike.
  std::map<std::string, std::pair<double, int>> by_gpu;  // sum of bytes-time / time, rows
  std::vector<std::vector<double>> rows;
  std::vector<double> y, w;
  for (const auto& c : all_curves()) {
    std::vector<const Step*> large;
    for (const auto& s : c.steps) {
      if (s.tokens >= 1024) large.push_back(&s);
    }
    for (const Step* s : large) {
      rows.push_back({s->elementwise_ms});
      y.push_back(s->elementwise_measured_ms);
      w.push_back(1.0 /
                  (s->elementwise_measured_ms * std::sqrt(static_cast<double>(large.size()))));
      auto& g = by_gpu[c.name.substr(0, 4)];
      g.first += s->elementwise_ms / s->elementwise_measured_ms;
      g.second += 1;
    }
  }
  ASSERT_GT(rows.size(), 2000u);
  const double efficiency = 1.0 / fit(rows, y, w)(0);
  std::cout << "element-wise efficiency " << efficiency << "\n";
  EXPECT_NEAR(efficiency, kDefaultElementwiseEfficiency, 0.01);
  const double a100 = by_gpu["a100"].first / by_gpu["a100"].second;
  const double h100 = by_gpu["h100"].first / by_gpu["h100"].second;
  std::cout << "a100 " << a100 << ", h100 " << h100 << "\n";
  EXPECT_NEAR(a100, 0.47, 0.015);
  EXPECT_NEAR(h100, 0.50, 0.015);
}

TEST(CostModelProfile, TheElementwiseBytesAreTheActivationsOfEveryKernel) {
  // Llama-3.1-8B (hidden 4,096, 32 query and 8 KV heads of 128, MLP 14,336) at TP 1 and 2: two
  // fused add-norms move 4 hidden rows each, the rotary embedding reads and writes q and k, the
  // activation reads 2 MLP rows and writes 1; BF16, 32 layers.
  const LlmSpec llm = find_model("Llama-3.1-8B");
  const GpuSpec gpu = find_gpu("A100-80GB-SXM");
  const double tp1 = 2.0 * 32 * (2 * 4 * 4096 + 2 * 40 * 128 + 3 * 14336);
  const double tp2 = 2.0 * 32 * (2 * 4 * 4096 + 2 * 20 * 128 + 3 * 7168);
  EXPECT_DOUBLE_EQ(RooflineCostModel(gpu, llm, 1).elementwise_bytes_per_token(), tp1);
  EXPECT_DOUBLE_EQ(RooflineCostModel(gpu, llm, 2).elementwise_bytes_per_token(), tp2);
  // A step of 2,048 tokens pays them serially, at the default efficiency.
  const std::vector<BatchEntry> batch = {{2048, 0}};
  const auto b = RooflineCostModel(gpu, llm, 1).breakdown(batch);
  EXPECT_NEAR(b.elementwise_ms,
              2048 * tp1 / (kDefaultElementwiseEfficiency * gpu.memory_bandwidth_gbs * 1e9) * 1e3,
              1e-9);
  EXPECT_NEAR(b.gpu_ms,
              std::max(b.compute_ms, b.memory_ms) +
                  kDefaultUnoverlappedFraction * std::min(b.compute_ms, b.memory_ms) +
                  b.elementwise_ms,
              1e-12);
  // About a tenth of the linear layers' time on the A100 at this size (Vidur: 9-10%).
  EXPECT_GT(b.elementwise_ms / b.compute_ms, 0.06);
  EXPECT_LT(b.elementwise_ms / b.compute_ms, 0.14);
}

TEST(CostModelProfile, QueryKeyNormsAndLatentNormsAreElementwiseBytesToo) {
  // Qwen3-8B (hidden 4,096, 32 query and 8 KV heads of 128, MLP 12,288, 36 layers) norms every
  // query and key head before rotating it: the rotary term's bytes once more.
  const GpuSpec gpu = find_gpu("H100-SXM");
  const LlmSpec qwen = find_model("Qwen3-8B");
  ASSERT_TRUE(qwen.qk_norm);
  const double rotary = 2 * 40 * 128;
  EXPECT_DOUBLE_EQ(RooflineCostModel(gpu, qwen, 1).elementwise_bytes_per_token(),
                   2.0 * 36 * (2 * 4 * 4096 + 2 * rotary + 3 * 12288));
  LlmSpec plain = qwen;
  plain.qk_norm = false;
  EXPECT_DOUBLE_EQ(RooflineCostModel(gpu, qwen, 1).elementwise_bytes_per_token() -
                       RooflineCostModel(gpu, plain, 1).elementwise_bytes_per_token(),
                   2.0 * 36 * rotary);
  EXPECT_FALSE(find_model("Llama-3.1-8B").qk_norm);
  // DeepSeek-V3 at TP 8 norms its 1,536-wide query bottleneck and 512-wide KV latent whole on
  // every rank, beside the rotary part of its 16 local heads and the shared key.
  const LlmSpec ds = find_model("DeepSeek-V3");
  const double dense = 3 * (18432 / 8.0);
  const double experts = 3 * ((8 * 2048 + 2048) / 8.0);
  EXPECT_DOUBLE_EQ(
      RooflineCostModel(find_gpu("H200"), ds, 8).elementwise_bytes_per_token(),
      2.0 * (61 * (2 * 4 * 7168 + 2 * ((16 + 1) * 64 + 1536 + 512)) + 3 * dense + 58 * experts));
}

TEST(CostModelProfile, TheCostModelTimesAProfiledLayerAsThisTestDoes) {
  // predicted_ms() above is the roofline's own rule: a one-layer model of Llama-3-8B's shape
  // timed by RooflineCostModel adds the same floor and unoverlapped part.
  const RooflineCostModel m(find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1);
  const std::vector<BatchEntry> batch = {{128, 0}};
  const auto b = m.breakdown(batch);
  EXPECT_NEAR(b.kernel_floor_ms, 32 * 4 * kDefaultKernelFloorUs * 1e-3, 1e-12);
  EXPECT_NEAR(b.gpu_ms,
              std::max(b.compute_ms, b.memory_ms) +
                  kDefaultUnoverlappedFraction * std::min(b.compute_ms, b.memory_ms) +
                  b.elementwise_ms,
              1e-12);
}

}  // namespace
}  // namespace fleetsim
