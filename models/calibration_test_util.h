// Helpers for the calibration tests: step timings made by the simulator's own cost models, with
// multiplicative noise, and the truths and options the fits are checked against. Draws come from
// the raw mt19937_64 output (the std:: distributions differ between standard libraries), so the
// committed example files regenerate identically everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>
#include <utility>
#include <vector>

#include "models/calibration.h"
#include "models/cost_model.h"
#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/rng.h"

namespace fleetsim::testing {

inline double uniform(Rng& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

inline int uniform_int(Rng& rng, int lo, int hi) {
  return std::min(hi, lo + static_cast<int>(uniform(rng) * (hi - lo + 1)));
}

// Log-uniform integer in [lo, hi]: as many short prefills as long ones.
inline int log_uniform_int(Rng& rng, int lo, int hi) {
  return static_cast<int>(
      std::lround(std::exp(std::log(lo) + uniform(rng) * std::log(1.0 * hi / lo))));
}

inline double normal(Rng& rng) {  // Box-Muller
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
inline SyntheticStep random_step(Rng& rng, int kind) {
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

inline double step_ms(const RooflineCostModel& m, std::span<const BatchEntry> b) {
  return m.breakdown(b).total_ms;
}
inline double step_ms(const FittedCostModel& m, std::span<const BatchEntry> b) {
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
inline RooflineCostModel truth_roofline() {
  return RooflineCostModel(
      find_gpu("A100-80GB-SXM"), find_model("Llama-3.1-8B"), 1,
      {.compute_efficiency = 0.6, .bandwidth_efficiency = 0.7, .step_overhead_ms = 2.0});
}

inline FittedCoefficients truth_fitted() {
  FittedCoefficients c;
  c.prefill_a_ms = 3.0;
  c.prefill_b_ms_per_token = 0.06;
  c.prefill_c_ms_per_token2 = 1.2e-6;
  c.decode_a_ms = 10.0;
  c.decode_b_ms_per_ctx_token = 8e-5;
  c.decode_c_ms_per_seq = 0.02;
  return c;
}

inline CalibrationOptions roofline_options() {
  CalibrationOptions o;
  o.form = "roofline";
  o.target.gpu = "A100-80GB-SXM";
  o.target.model = "Llama-3.1-8B";
  return o;
}

inline CalibrationOptions fitted_options() {
  CalibrationOptions o;
  o.form = "fitted";
  return o;
}

}  // namespace fleetsim::testing
