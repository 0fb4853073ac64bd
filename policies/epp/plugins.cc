#include "policies/epp/plugins.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "sim/errors.h"

namespace fleetsim {
namespace {

// ---------------------------------------------------------------------------------------------
// Filters

// prefix-cache-affinity-filter, as Gateway API Inference Extension
// pkg/epp/framework/plugins/scheduling/filter/prefixcacheaffinity/plugin.go and its README:
//  * with more than one candidate, skip the gate with probability explorationProbability (0.01);
//  * sticky = candidates whose prefix score >= affinityThreshold (0.80); none sticky -> keep all;
//  * TTFT load gate: if the best sticky candidate's predicted TTFT exceeds the best non-sticky
//    one's by more than maxTTFTPenaltyMs (5000; 0 = always stick), keep all. The predictions
//    come from a latency-predictor producer; without one (ttft_prediction: none) every
//    endpoint's best TTFT is MaxFloat64, the difference is 0 and the gate stays shut;
//  * otherwise keep only the sticky ones.
// The predicted TTFT is the filter's throughput mode (llm-d guides, recipes/router/calibration):
// in-flight tokens / peakPrefillThroughput (15928 tokens/s by default, calibrated upstream for
// Qwen3-32B on H100 TP=2). PodState::inflight_tokens stands for the inflight-load-producer's count.
class PrefixCacheAffinityFilter : public EppFilter {
 public:
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }
  explicit PrefixCacheAffinityFilter(const EppPluginArgs& args)
      : threshold_(args.params->get_double("affinity_threshold")),
        explore_(args.params->get_double("affinity_explore_probability")),
        max_penalty_ms_(args.params->get_string("ttft_prediction") == "none"
                            ? 0.0
                            : args.params->get_double("affinity_max_ttft_penalty_ms")),
        peak_tokens_per_s_(args.params->get_double("peak_prefill_tokens_per_s")),
        rng_(make_rng(args.ctx->seed, args.ctx->stream_name + "/explore")) {}

  Kept filter(const EppCycle& cycle, Kept kept) override {
    if (kept.size() <= 1 || threshold_ <= 0) return kept;
    if (explore_ > 0 && std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < explore_) {
      return kept;
    }
    Kept sticky;
    Kept other;
    for (const size_t i : kept) (cycle.prefix_score[i] >= threshold_ ? sticky : other).push_back(i);
    if (sticky.empty()) return kept;
    if (max_penalty_ms_ > 0 && !other.empty() &&
        best_ttft_ms(cycle, sticky) - best_ttft_ms(cycle, other) > max_penalty_ms_) {
      return kept;
    }
    return sticky;
  }

 private:
  double best_ttft_ms(const EppCycle& cycle, const Kept& set) const {
    double best = std::numeric_limits<double>::infinity();
    for (const size_t i : set) {
      const double ttft =
          static_cast<double>(cycle.pods[i].inflight_tokens) / peak_tokens_per_s_ * 1000.0;
      best = std::min(best, ttft);
    }
    return best;
  }

  double threshold_;
  double explore_;
  double max_penalty_ms_;
  double peak_tokens_per_s_;
  Rng rng_;
};

// ---------------------------------------------------------------------------------------------
// Scorers

// token-load-scorer, GIE pkg/epp/framework/plugins/scheduling/scorer/tokenload/token_load.go:
// 1 - min(tokens, queueThresholdTokens) / queueThresholdTokens, 1 when nothing is in flight.
class TokenLoadScorer : public EppScorer {
 public:
  bool reads_engine_state() const override { return false; }
  explicit TokenLoadScorer(const EppPluginArgs& args)
      : capacity_(static_cast<double>(args.params->get_int("token_load_capacity"))) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    for (size_t k = 0; k < kept.size(); ++k) {
      const auto tokens = static_cast<double>(cycle.pods[kept[k]].inflight_tokens);
      out[k] = tokens <= 0 ? 1.0 : 1.0 - std::min(tokens, capacity_) / capacity_;
    }
  }

 private:
  double capacity_;
};

// active-request-scorer, llm-d-inference-scheduler pkg/plugins/scorer/active_request.go:
// (maxCount - count) / maxCount, and 1 when count or maxCount is 0. Upstream takes maxCount over
// every endpoint it tracks, not only those left after filtering, so the max here runs over all
// candidates the gateway offered. Its counts are requests it dispatched and has not seen finish,
// which is PodState::inflight_requests.
class ActiveRequestScorer : public EppScorer {
 public:
  bool reads_engine_state() const override { return false; }
  explicit ActiveRequestScorer(const EppPluginArgs&) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    std::int32_t max_count = 0;
    for (const auto& pod : cycle.pods) max_count = std::max(max_count, pod.inflight_requests);
    for (size_t k = 0; k < kept.size(); ++k) {
      const std::int32_t count = cycle.pods[kept[k]].inflight_requests;
      out[k] = (count <= 0 || max_count <= 0)
                   ? 1.0
                   : static_cast<double>(max_count - count) / static_cast<double>(max_count);
    }
  }
};

// queue-scorer, GIE pkg/epp/framework/plugins/scheduling/scorer/queuedepth/queue.go:
// (max - q) / (max - min) over the scored candidates, 1 for all when every queue is equal.
class QueueScorer : public EppScorer {
 public:
  explicit QueueScorer(const EppPluginArgs&) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    std::int32_t lo = std::numeric_limits<std::int32_t>::max();
    std::int32_t hi = std::numeric_limits<std::int32_t>::min();
    for (const size_t i : kept) {
      lo = std::min(lo, cycle.pods[i].waiting);
      hi = std::max(hi, cycle.pods[i].waiting);
    }
    for (size_t k = 0; k < kept.size(); ++k) {
      out[k] = hi == lo ? 1.0
                        : static_cast<double>(hi - cycle.pods[kept[k]].waiting) /
                              static_cast<double>(hi - lo);
    }
  }
};

// kv-cache-utilization-scorer, GIE
// pkg/epp/framework/plugins/scheduling/scorer/kvcacheutilization/kvcache_utilization.go: 1 - usage.
class KvCacheUtilizationScorer : public EppScorer {
 public:
  explicit KvCacheUtilizationScorer(const EppPluginArgs&) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    for (size_t k = 0; k < kept.size(); ++k) out[k] = 1.0 - cycle.pods[kept[k]].kv_usage;
  }
};

// prefix-cache-scorer, GIE pkg/epp/scheduling/framework/plugins/multi/prefix/plugin.go (Score):
// matched blocks / prompt blocks from the approximate index, 0 when the prompt has no full block.
class PrefixCacheScorer : public EppScorer {
 public:
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }
  explicit PrefixCacheScorer(const EppPluginArgs&) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    for (size_t k = 0; k < kept.size(); ++k) out[k] = cycle.prefix_score[kept[k]];
  }
};

// load-aware-scorer, llm-d-inference-scheduler pkg/plugins/scorer/load_aware.go: 0.5 for an
// empty waiting queue, else 0.5 x (1 - min(waiting, threshold) / threshold); threshold 128.
class LoadAwareScorer : public EppScorer {
 public:
  explicit LoadAwareScorer(const EppPluginArgs& args)
      : threshold_(static_cast<double>(args.params->get_int("load_aware_threshold"))) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    for (size_t k = 0; k < kept.size(); ++k) {
      const double waiting = static_cast<double>(cycle.pods[kept[k]].waiting);
      out[k] = waiting <= 0 ? 0.5 : 0.5 * (1.0 - std::min(waiting, threshold_) / threshold_);
    }
  }

 private:
  double threshold_;
};

// no-hit-lru-scorer, llm-d-inference-scheduler pkg/plugins/scorer/no_hit_lru.go: for a cold
// request (no pod holds any of its prefix), pods that never took a cold request score highest,
// then the least recently used for cold requests, 1 - rank / (n - 1); warm requests score 0.5
// everywhere. Spreads the cache growth of new prefixes.
class NoHitLruScorer : public EppScorer {
 public:
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return true; }
  explicit NoHitLruScorer(const EppPluginArgs&) {}
  void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) override {
    bool cold = true;
    for (double s : cycle.prefix_score) cold = cold && s <= 0;
    if (!cold) {
      std::fill(out.begin(), out.end(), 0.5);
      return;
    }
    const auto n = static_cast<double>(kept.size());
    if (kept.size() == 1) {
      out[0] = 1.0;
      return;
    }
    int never_used = 0;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (position(cycle.pods[kept[k]].index) < 0) out[k] = 1.0 - never_used++ / (n - 1);
    }
    for (size_t k = 0; k < kept.size(); ++k) {
      const int pos = position(cycle.pods[kept[k]].index);
      if (pos >= 0) out[k] = std::max(0.0, 1.0 - (never_used + pos) / (n - 1));
    }
  }
  void dispatched(int pod, bool cold) override {
    if (!cold) return;
    std::erase(lru_, pod);
    lru_.push_back(pod);  // most recent last; position 0 is the least recently used
  }

 private:
  int position(int pod) const {
    for (size_t i = 0; i < lru_.size(); ++i) {
      if (lru_[i] == pod) return static_cast<int>(i);
    }
    return -1;
  }
  std::vector<int> lru_;
};

// ---------------------------------------------------------------------------------------------
// Pickers

// max-score-picker, GIE pkg/epp/framework/plugins/scheduling/picker/max_score_picker.go: the
// highest total; upstream shuffles before a stable sort, i.e. ties go uniformly at random
// (tie_break "random"). "rotation" instead takes the tied pod with the smallest index at or after
// a counter, wrapping, so three idle pods are used in turn.
class MaxScorePicker : public EppPicker {
 public:
  explicit MaxScorePicker(const EppPluginArgs& args)
      : rotation_(args.params->get_string("tie_break") == "rotation"),
        rng_(make_rng(args.ctx->seed, args.ctx->stream_name + "/tie")) {}

  size_t pick(const EppCycle& cycle, const Kept& kept, std::span<const double> totals) override {
    const double best = *std::max_element(totals.begin(), totals.end());
    Kept tied;
    for (size_t k = 0; k < kept.size(); ++k) {
      if (totals[k] >= best - kScoreTieEpsilon) tied.push_back(kept[k]);
    }
    if (tied.size() == 1) return tied.front();
    if (!rotation_) {
      std::uniform_int_distribution<size_t> any(0, tied.size() - 1);
      return tied[any(rng_)];
    }
    const size_t* at_or_after = nullptr;
    const size_t* smallest = nullptr;
    for (const size_t& i : tied) {
      const int index = cycle.pods[i].index;
      if (index >= next_ && (at_or_after == nullptr || index < cycle.pods[*at_or_after].index)) {
        at_or_after = &i;
      }
      if (smallest == nullptr || index < cycle.pods[*smallest].index) smallest = &i;
    }
    const size_t chosen = at_or_after != nullptr ? *at_or_after : *smallest;
    next_ = cycle.pods[chosen].index + 1;
    return chosen;
  }

 private:
  bool rotation_;
  Rng rng_;
  int next_ = 0;
};

// random-picker, GIE .../picker/random_picker.go: uniform over the kept candidates, scores unused.
class RandomPicker : public EppPicker {
 public:
  explicit RandomPicker(const EppPluginArgs& args)
      : rng_(make_rng(args.ctx->seed, args.ctx->stream_name + "/pick")) {}
  size_t pick(const EppCycle&, const Kept& kept, std::span<const double>) override {
    std::uniform_int_distribution<size_t> any(0, kept.size() - 1);
    return kept[any(rng_)];
  }

 private:
  Rng rng_;
};

// weighted-random-picker, GIE .../picker/weighted_random_picker.go: picks with probability
// proportional to the total score (its A-Res sampling, for one pick); uniform when all are 0.
class WeightedRandomPicker : public EppPicker {
 public:
  explicit WeightedRandomPicker(const EppPluginArgs& args)
      : rng_(make_rng(args.ctx->seed, args.ctx->stream_name + "/pick")) {}
  size_t pick(const EppCycle&, const Kept& kept, std::span<const double> totals) override {
    double sum = 0;
    for (const double t : totals) sum += std::max(0.0, t);
    if (sum <= 0) {
      std::uniform_int_distribution<size_t> any(0, kept.size() - 1);
      return kept[any(rng_)];
    }
    double u = std::uniform_real_distribution<double>(0.0, sum)(rng_);
    for (size_t k = 0; k < kept.size(); ++k) {
      u -= std::max(0.0, totals[k]);
      if (u < 0) return kept[k];
    }
    return kept.back();
  }

 private:
  Rng rng_;
};

template <typename Base>
using Factories = std::map<std::string, std::function<std::unique_ptr<Base>(const EppPluginArgs&)>>;

template <typename Base, typename T>
std::function<std::unique_ptr<Base>(const EppPluginArgs&)> factory() {
  return
      [](const EppPluginArgs& args) -> std::unique_ptr<Base> { return std::make_unique<T>(args); };
}

const Factories<EppFilter>& filters() {
  static const Factories<EppFilter> kFactories = {
      {"prefix-cache-affinity-filter", factory<EppFilter, PrefixCacheAffinityFilter>()},
  };
  return kFactories;
}

const Factories<EppScorer>& scorers() {
  static const Factories<EppScorer> kFactories = {
      {"token-load-scorer", factory<EppScorer, TokenLoadScorer>()},
      {"active-request-scorer", factory<EppScorer, ActiveRequestScorer>()},
      {"queue-scorer", factory<EppScorer, QueueScorer>()},
      {"kv-cache-utilization-scorer", factory<EppScorer, KvCacheUtilizationScorer>()},
      {"prefix-cache-scorer", factory<EppScorer, PrefixCacheScorer>()},
      {"load-aware-scorer", factory<EppScorer, LoadAwareScorer>()},
      {"no-hit-lru-scorer", factory<EppScorer, NoHitLruScorer>()},
  };
  return kFactories;
}

const Factories<EppPicker>& pickers() {
  static const Factories<EppPicker> kFactories = {
      {"max-score", factory<EppPicker, MaxScorePicker>()},
      {"random", factory<EppPicker, RandomPicker>()},
      {"weighted-random", factory<EppPicker, WeightedRandomPicker>()},
  };
  return kFactories;
}

template <typename Base>
std::vector<std::string> names_of(const Factories<Base>& f) {
  std::vector<std::string> out;
  for (const auto& [name, make] : f) out.push_back(name);
  return out;
}

template <typename Base>
std::unique_ptr<Base> build(const Factories<Base>& f, const std::string& kind,
                            const std::string& name, const EppPluginArgs& args) {
  auto it = f.find(name);
  if (it == f.end()) throw UnknownNameError(kind, name, names_of(f));
  return it->second(args);
}

}  // namespace

std::vector<std::string> epp_filter_names() { return names_of(filters()); }
std::vector<std::string> epp_scorer_names() { return names_of(scorers()); }
std::vector<std::string> epp_picker_names() { return names_of(pickers()); }

std::unique_ptr<EppFilter> make_epp_filter(const std::string& name, const EppPluginArgs& args) {
  return build(filters(), "EPP filter", name, args);
}
std::unique_ptr<EppScorer> make_epp_scorer(const std::string& name, const EppPluginArgs& args) {
  return build(scorers(), "EPP scorer", name, args);
}
std::unique_ptr<EppPicker> make_epp_picker(const std::string& name, const EppPluginArgs& args) {
  return build(pickers(), "EPP picker", name, args);
}

}  // namespace fleetsim
