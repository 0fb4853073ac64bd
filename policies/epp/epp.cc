#include "policies/epp/epp.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/errors.h"

namespace fleetsim {

std::vector<std::string> split_epp_list(const std::string& text) {
  std::vector<std::string> out;
  for (std::string& item : split_trimmed(text, ',')) {
    if (!item.empty()) out.push_back(std::move(item));
  }
  if (out.size() == 1 && out.front() == "none") out.clear();
  return out;
}

std::vector<std::pair<std::string, double>> parse_weighted_scorers(const std::string& text) {
  std::vector<std::pair<std::string, double>> out;
  for (const std::string& item : split_epp_list(text)) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      out.emplace_back(item, 1.0);
      continue;
    }
    const std::string name = item.substr(0, colon);
    const std::string weight_text = item.substr(colon + 1);
    double weight = 0;
    size_t used = 0;
    try {
      weight = std::stod(weight_text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != weight_text.size() || !std::isfinite(weight) || weight < 0) {
      throw ScenarioError("epp scorers: bad weight '" + weight_text + "' for '" + name +
                          "'; expected name:weight with a weight >= 0");
    }
    out.emplace_back(name, weight);
  }
  return out;
}

namespace {

// GIE's defaultLRUCapacityPerServer, used when the capacity is neither set nor known.
constexpr std::int64_t kDefaultLruCapacity = 31250;

std::int64_t lru_capacity(const Params& params) {
  const std::int64_t set = params.get_int("lru_capacity_per_server");
  return set > 0 ? set : kDefaultLruCapacity;
}

// autoTune (approximateprefix makeserver): a pod's index holds as many entries as the pod has
// KV blocks. Entries are blocks of the index's own size, so the pod's capacity is converted
// when the two block sizes differ.
std::vector<std::int64_t> lru_capacities(const Params& params, const PolicyContext& ctx) {
  if (params.get_int("lru_capacity_per_server") > 0) return {};
  const std::int32_t index_block =
      epp_block_tokens(params.get_int("block_size_chars"), params.get_double("chars_per_token"));
  std::vector<std::int64_t> out;
  for (const std::int64_t blocks : ctx.pod_kv_blocks) {
    out.push_back(std::max<std::int64_t>(1, blocks * ctx.engine_block_size / index_block));
  }
  return out;
}

}  // namespace

EppPolicy::EppPolicy(const Params& params, const PolicyContext& ctx)
    : block_tokens_(epp_block_tokens(params.get_int("block_size_chars"),
                                     params.get_double("chars_per_token"))),
      max_blocks_(static_cast<std::int32_t>(params.get_int("max_prefix_blocks"))),
      index_(lru_capacity(params), lru_capacities(params, ctx)),
      precise_(params.get_string("prefix_source") == "precise"),
      cached_(ctx.pod_names.size()),
      release_by_ttl_(params.get_string("inflight_release") == "ttl"),
      release_at_pick_(params.get_string("inflight_release") == "at_pick"),
      request_timeout_(ms_to_ns(1000.0 * params.get_double("request_timeout_s"))),
      booked_(ctx.pod_names.size()),
      booked_tokens_(ctx.pod_names.size(), 0),
      estimate_like_gie_(params.get_string("token_estimator") == "gie"),
      chars_per_token_(params.get_double("chars_per_token")),
      estimated_tokens_(ctx.pod_names.size(), 0) {
  const EppPluginArgs args{&params, &ctx};
  for (const auto& name : split_epp_list(params.get_string("filters"))) {
    filters_.push_back(make_epp_filter(name, args));
  }
  for (const auto& [name, weight] : parse_weighted_scorers(params.get_string("scorers"))) {
    scorers_.emplace_back(make_epp_scorer(name, args), weight);
  }
  picker_ = make_epp_picker(params.get_string("picker"), args);
}

const std::vector<BlockHash>& EppPolicy::prefix_hashes(const Request& request) const {
  HashedRequest& last = last_hashed_;
  const bool from_engine_hashes =
      request.block_hashes != nullptr && request.hash_block_size == block_tokens_;
  if (!from_engine_hashes || last.source != request.block_hashes ||
      last.prompt_tokens != request.prompt_tokens || last.model != request.model) {
    last.hashes = prompt_prefix_hashes(request, block_tokens_, max_blocks_);
    last.source = from_engine_hashes ? request.block_hashes : nullptr;
    last.prompt_tokens = request.prompt_tokens;
    last.model = request.model;
  }
  return last.hashes;
}

EppCycle EppPolicy::make_cycle(const Request& request, std::span<const PodState> candidates) const {
  EppCycle cycle;
  cycle.request = &request;
  cycle.pods = candidates;
  cycle.prefix_score.assign(candidates.size(), 0.0);
  if (precise_) {
    // The engine's own block hashes of the prompt, matched against each pod's stored blocks.
    const std::size_t blocks = std::min<std::size_t>(
        request.block_hashes ? request.block_hashes->size() : 0,
        static_cast<std::size_t>(request.prompt_tokens / std::max(1, request.hash_block_size)));
    if (blocks == 0) return cycle;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& have = cached_[static_cast<size_t>(candidates[i].index)];
      size_t m = 0;
      while (m < blocks && have.count((*request.block_hashes)[m])) ++m;
      cycle.prefix_score[i] = static_cast<double>(m) / static_cast<double>(blocks);
    }
    return cycle;
  }
  const std::vector<BlockHash>& hashes = prefix_hashes(request);
  const std::vector<std::int32_t> matched = index_.match(hashes);
  if (hashes.empty()) return cycle;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto pod = static_cast<size_t>(candidates[i].index);
    const std::int32_t m = pod < matched.size() ? matched[pod] : 0;
    cycle.prefix_score[i] = static_cast<double>(m) / static_cast<double>(hashes.size());
  }
  return cycle;
}

namespace {

EppPolicy::Scored run_pipeline(
    const EppCycle& cycle, std::vector<std::unique_ptr<EppFilter>>& filters,
    std::vector<std::pair<std::unique_ptr<EppScorer>, double>>& scorers) {
  EppPolicy::Scored out;
  out.kept.resize(cycle.pods.size());
  for (size_t i = 0; i < cycle.pods.size(); ++i) out.kept[i] = i;
  for (auto& f : filters) {
    out.kept = f->filter(cycle, std::move(out.kept));
    if (out.kept.empty()) return out;
  }
  out.totals.assign(out.kept.size(), 0.0);
  std::vector<double> scores(out.kept.size());
  for (auto& [scorer, weight] : scorers) {
    std::fill(scores.begin(), scores.end(), 0.0);
    scorer->score(cycle, out.kept, scores);
    for (size_t k = 0; k < scores.size(); ++k) {
      out.totals[k] += weight * std::clamp(scores[k], 0.0, 1.0);
    }
  }
  return out;
}

}  // namespace

EppPolicy::Scored EppPolicy::evaluate(const Request& request,
                                      std::span<const PodState> candidates) {
  return run_pipeline(make_cycle(request, candidates), filters_, scorers_);
}

std::span<const PodState> EppPolicy::booked_view(std::span<const PodState> candidates, TimeNs now) {
  view_.assign(candidates.begin(), candidates.end());
  for (auto& pod : view_) {
    const auto i = static_cast<size_t>(pod.index);
    auto& q = booked_[i];
    while (!q.empty() && now - q.front().at >= request_timeout_) {
      booked_tokens_[i] -= q.front().tokens;
      q.pop_front();
    }
    pod.inflight_requests = static_cast<std::int32_t>(q.size());
    pod.inflight_tokens = booked_tokens_[i];
  }
  return view_;
}

std::span<const PodState> EppPolicy::idle_view(std::span<const PodState> candidates) {
  view_.assign(candidates.begin(), candidates.end());
  for (auto& pod : view_) {
    pod.inflight_requests = 0;
    pod.inflight_tokens = 0;
  }
  return view_;
}

std::span<const PodState> EppPolicy::estimated_view(std::span<const PodState> candidates) {
  view_.assign(candidates.begin(), candidates.end());
  for (auto& pod : view_) {
    const auto i = static_cast<size_t>(pod.index);
    pod.inflight_tokens = i < estimated_tokens_.size() ? estimated_tokens_[i] : 0;
  }
  return view_;
}

std::int64_t EppPolicy::estimate_tokens(const Request& request) const {
  if (!estimate_like_gie_) return request.prompt_tokens + request.output_tokens;
  // GIE inflightload/token_estimator.go: input = max(request bytes / 4, 1) with the prompt's
  // characters standing for the body's bytes; output = round(input x 1.5).
  const auto input = std::max<std::int64_t>(
      1,
      static_cast<std::int64_t>(static_cast<double>(request.prompt_tokens) * chars_per_token_) / 4);
  return input + std::llround(static_cast<double>(input) * 1.5);
}

bool EppPolicy::reads_engine_state() const {
  return std::any_of(filters_.begin(), filters_.end(),
                     [](const auto& f) { return f->reads_engine_state(); }) ||
         std::any_of(scorers_.begin(), scorers_.end(),
                     [](const auto& s) { return s.first->reads_engine_state(); });
}

bool EppPolicy::follows_prompt_content() const {
  return std::any_of(filters_.begin(), filters_.end(),
                     [](const auto& f) { return f->follows_prompt_content(); }) ||
         std::any_of(scorers_.begin(), scorers_.end(), [](const auto& s) {
           return s.first->follows_prompt_content() && s.second > 0;
         });
}

int EppPolicy::pick(const Request& request, std::span<const PodState> live,
                    const RouteContext& ctx) {
  if (live.empty()) return -1;
  last_pick_ = ctx.now;
  const std::span<const PodState> candidates = release_at_pick_  ? idle_view(live)
                                               : release_by_ttl_ ? booked_view(live, ctx.now)
                                                                 : estimated_view(live);
  const EppCycle cycle = make_cycle(request, candidates);
  const Scored scored = run_pipeline(cycle, filters_, scorers_);
  if (scored.kept.empty()) return -1;  // a filter removed every pod: the EPP has no answer
  return candidates[picker_->pick(cycle, scored.kept, scored.totals)].index;
}

void EppPolicy::on_kv_events(int pod, std::span<const KvEvent> events) {
  auto& have = cached_[static_cast<size_t>(pod)];
  for (const KvEvent& e : events) {
    switch (e.kind) {
      case KvEventKind::kStored:
        have.insert(e.hash);
        break;
      case KvEventKind::kRemoved:
        have.erase(e.hash);
        break;
      case KvEventKind::kCleared:
        have.clear();
        break;
    }
  }
}

void EppPolicy::on_dispatched(const Request& request, int pod) {
  if (pod < 0) return;
  // Cold = no pod held any of the prompt's prefix before this dispatch.
  bool cold = true;
  if (precise_) {
    if (request.block_hashes && !request.block_hashes->empty()) {
      for (const auto& have : cached_) cold = cold && !have.count(request.block_hashes->front());
    }
  } else {
    // A match stops at the first block no pod holds, so no pod matches when that is the first.
    const std::vector<BlockHash>& hashes = prefix_hashes(request);
    cold = hashes.empty() || !index_.held_anywhere(hashes.front());
  }
  for (auto& [scorer, weight] : scorers_) scorer->dispatched(pod, cold);
  const std::int64_t tokens = estimate_tokens(request);
  if (release_by_ttl_) {
    booked_[static_cast<size_t>(pod)].push_back({last_pick_, tokens});
    booked_tokens_[static_cast<size_t>(pod)] += tokens;
  } else {
    if (static_cast<size_t>(pod) >= estimated_tokens_.size()) {
      estimated_tokens_.resize(static_cast<size_t>(pod) + 1, 0);
    }
    estimated_tokens_[static_cast<size_t>(pod)] += tokens;
  }
  if (precise_) return;
  index_.add(pod, prefix_hashes(request));
}

void EppPolicy::on_finished(const Request& request, int pod) {
  if (release_by_ttl_ || pod < 0 || static_cast<size_t>(pod) >= estimated_tokens_.size()) return;
  estimated_tokens_[static_cast<size_t>(pod)] -= estimate_tokens(request);
}

namespace {

// Defaults = the profile of the measured deployment (shared/validation/measured-3pod-a100.yaml):
// prefix-cache-affinity-filter, then token-load-scorer + active-request-scorer (weight 1 each),
// then the max-score picker. The prefix index defaults are those of GIE's
// approx-prefix-cache-producer (pkg/epp/framework/plugins/requestcontrol/dataproducer/
// approximateprefix: blocks of 16 tokens at 4 characters a token = 64 characters,
// maxPrefixBlocksToMatch = 256, autoTune on, so each pod's LRU holds as many entries as the pod
// has KV blocks; 31250 when that is unknown). The filter defaults are those of
// pkg/epp/framework/plugins/scheduling/filter/prefixcacheaffinity (affinityThreshold 0.80,
// explorationProbability 0.01, maxTTFTPenaltyMs 5000) with llm-d's peakPrefillThroughput default
// 15928; the token-load default is tokenload/token_load.go (4194304 tokens).
ParamSpec epp_spec(const std::string& filters = "prefix-cache-affinity-filter",
                   const std::string& scorers = "token-load-scorer:1,active-request-scorer:1") {
  const std::string filter_names = join(epp_filter_names(), ", ");
  const std::string scorer_names = join(epp_scorer_names(), ", ");
  return ParamSpec()
      .text("filters", filters,
            "comma list of filters applied in order ('' or 'none': no filter); valid: " +
                filter_names)
      .text("scorers", scorers,
            "comma list of name:weight (weight 1 if omitted); total = sum of weight x "
            "clamp(score, 0, 1); valid: " +
                scorer_names)
      .text("picker", "max-score",
            "max-score: highest total, ties by tie_break; random: uniform over the filtered "
            "pods; weighted-random: probability proportional to the total",
            epp_picker_names())
      .text("tie_break", "random",
            "max-score ties: random = uniform among tied (GIE shuffles before sorting); rotation "
            "= the tied pod with the smallest index at or after a counter",
            {"random", "rotation"})
      .integer("block_size_chars", 64,
               "prefix index block, in prompt characters (GIE hashBlockSize)", 1, 1e9)
      .real("chars_per_token", 4.0,
            "characters per token, to turn block_size_chars into tokens (GIE assumes 4)", 0.01, 1e6)
      .integer("max_prefix_blocks", 256,
               "at most this many leading prompt blocks are hashed and matched "
               "(GIE maxPrefixBlocksToMatch)",
               1, 1e9)
      .integer("load_aware_threshold", 128,
               "load-aware-scorer: waiting requests at which a pod scores 0 (llm-d "
               "QueueThresholdDefault)",
               1, 1e9)
      .integer("lru_capacity_per_server", 0,
               "blocks the index remembers per pod, LRU (GIE lruCapacityPerServer); 0 = autoTune "
               "(GIE's default): each pod's own KV capacity in blocks, as its vLLM metrics report "
               "it, or 31250 when unknown",
               0, 1e12)
      .text("prefix_source", "approximate",
            "where prefix scores come from: approximate (an index of routed prompts written at "
            "dispatch, GIE's prefix plugin) or precise (each pod's true cache from its KV events, "
            "llm-d's precise-prefix-cache scorer; delay: gateway.kv_event_delay_ms)",
            {"approximate", "precise"})
      .real("affinity_threshold", 0.8,
            "prefix-cache-affinity-filter: keep pods whose prefix score (matched / prompt "
            "blocks) is at least this; all pods when none is (0: filter off)",
            0.0, 1.0)
      .real("affinity_explore_probability", 0.01,
            "prefix-cache-affinity-filter: probability of skipping the filter for a request "
            "(upstream explorationProbability)",
            0.0, 1.0)
      .real("affinity_max_ttft_penalty_ms", 5000.0,
            "prefix-cache-affinity-filter TTFT gate: keep all pods when the best sticky pod's "
            "predicted TTFT exceeds the best other pod's by more than this (0: always stick)",
            0.0, 1e12)
      .text("ttft_prediction", "none",
            "what gives the TTFT gate its predicted TTFTs: none = no latency-predictor producer "
            "in the profile (the measured one has none), so upstream compares MaxFloat64 with "
            "MaxFloat64 and the gate never opens; inflight_tokens = in-flight tokens / "
            "peak_prefill_tokens_per_s (llm-d's throughput-mode predictor)",
            {"none", "inflight_tokens"})
      .real("peak_prefill_tokens_per_s", 15928.0,
            "prefix-cache-affinity-filter, ttft_prediction inflight_tokens: predicted TTFT = "
            "in-flight tokens / this (upstream peakPrefillThroughput, calibrated for Qwen3-32B "
            "on H100 TP=2)",
            1e-6, 1e12)
      .text("inflight_release", "end_of_stream",
            "when the EPP's in-flight counts (active-request and token-load scorers, the TTFT "
            "gate) drop a request: end_of_stream = when its response ends, as GIE's "
            "ResponseComplete hook reports it through an Envoy ext-proc gateway; ttl = only after "
            "request_timeout_s, for a gateway that asks the EPP for a pod but never streams the "
            "response back through it (GIE before the producers, whose scorer kept its own TTL "
            "cache); at_pick = at once, for a gateway that closes the ext-proc stream when it has "
            "its pod (a headers-and-body exchange): llm-d-router's Process runs the completion "
            "hooks when the stream ends (handlers/server.go), so the scorers see no load",
            {"end_of_stream", "ttl", "at_pick"})
      .real("request_timeout_s", 120.0,
            "inflight_release = ttl: how long a dispatched request counts as in flight "
            "(llm-d active_request.go defaultRequestTimeout, 2 minutes)",
            0.001, 1e9)
      .text("token_estimator", "gie",
            "how the EPP counts a request's in-flight tokens (token-load scorer, TTFT gate): gie "
            "= GIE's SimpleTokenEstimator, prompt characters / 4 plus 1.5x that for the output "
            "(inflightload/token_estimator.go); exact = the prompt's tokens plus the tokens "
            "actually generated",
            {"gie", "exact"})
      .integer("token_load_capacity", 4194304,
               "token-load-scorer: in-flight tokens at which the score reaches 0 "
               "(queueThresholdTokens)",
               1, 1e15);
}

const PolicyRegistrar kEppRegistrar(
    "epp",
    "Endpoint Picker (GIE / llm-d): prefix-cache-affinity filter, weighted token-load + "
    "active-request scorers, max-score picker; approximate prefix index written on dispatch",
    epp_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<EppPolicy>(p, ctx);
    });

// The llm-d inference scheduler's sample profile "prefix cache in estimate mode and load-aware
// scorers" (llm-d/llm-d-inference-scheduler, deploy/config sample EndpointPickerConfig):
// no filter, prefix-cache-scorer weight 2, load-aware-scorer weight 1, max-score picker.
const PolicyRegistrar kEppLlmdLoadAwareRegistrar(
    "epp-llmd-load-aware",
    "EPP preset: llm-d's estimate-mode sample profile, prefix-cache-scorer x2 + load-aware-scorer, "
    "no filter, max-score picker",
    epp_spec("none", "prefix-cache-scorer:2,load-aware-scorer:1"),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<EppPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
