#include "policies/dynamo_kv/dynamo_kv.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "policies/epp/approx_prefix_index.h"

namespace fleetsim {

DynamoKvPolicy::DynamoKvPolicy(const Params& params, const PolicyContext& ctx)
    : overlap_weight_(params.get_double("overlap_score_weight")),
      temperature_(params.get_double("router_temperature")),
      ttl_(sec_to_ns(params.get_double("router_ttl_s"))),
      max_tree_size_(params.get_int("router_max_tree_size")),
      prune_ratio_(params.get_double("router_prune_target_ratio")),
      track_active_blocks_(params.get_bool("router_track_active_blocks")),
      block_size_(ctx.engine_block_size),
      pods_(ctx.pod_names.size()),
      rng_(make_rng(ctx.seed, ctx.stream_name + "/sample")) {}

DynamoKvPolicy::WorkerView& DynamoKvPolicy::state_for(int pod) {
  if (static_cast<size_t>(pod) >= pods_.size()) pods_.resize(static_cast<size_t>(pod) + 1);
  return pods_[static_cast<size_t>(pod)];
}

std::vector<BlockHash> DynamoKvPolicy::prompt_blocks(const Request& request) const {
  // Full prompt blocks only (compute_seq_hashes_for_tracking: tokens.len() / block_size).
  return prompt_prefix_hashes(request, block_size_, std::numeric_limits<std::int32_t>::max());
}

std::int32_t DynamoKvPolicy::overlap(int pod, std::span<const BlockHash> hashes, TimeNs now) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return 0;
  const auto& index = pods_[static_cast<size_t>(pod)].index;
  std::int32_t n = 0;
  for (const BlockHash h : hashes) {
    auto it = index.find(h);
    if (it == index.end() || it->second.expiry <= now) break;
    ++n;
  }
  return n;
}

std::int64_t DynamoKvPolicy::active_blocks(int pod) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return 0;
  return static_cast<std::int64_t>(pods_[static_cast<size_t>(pod)].active.size());
}

std::int64_t DynamoKvPolicy::pending_prefill_tokens(int pod) const {
  if (pod < 0 || static_cast<size_t>(pod) >= pods_.size()) return 0;
  return pods_[static_cast<size_t>(pod)].pending_prefill;
}

DynamoKvPolicy::Cost DynamoKvPolicy::cost(const Request& request, int pod, TimeNs now) const {
  const std::vector<BlockHash> hashes = prompt_blocks(request);
  Cost c;
  c.overlap_blocks = overlap(pod, hashes, now);
  const std::int64_t isl = request.prompt_tokens;
  const std::int64_t new_tokens =
      std::max<std::int64_t>(0, isl - static_cast<std::int64_t>(c.overlap_blocks) * block_size_);
  c.prefill_blocks = static_cast<double>(pending_prefill_tokens(pod) + new_tokens) /
                     static_cast<double>(block_size_);
  std::int64_t decode = active_blocks(pod);
  if (track_active_blocks_ && pod >= 0 && static_cast<size_t>(pod) < pods_.size()) {
    const auto& active = pods_[static_cast<size_t>(pod)].active;
    for (const BlockHash h : hashes) decode += active.count(h) == 0 ? 1 : 0;
  } else if (track_active_blocks_) {
    decode += static_cast<std::int64_t>(hashes.size());
  }
  c.decode_blocks = static_cast<double>(decode);
  c.logit = overlap_weight_ * c.prefill_blocks + c.decode_blocks;
  return c;
}

void DynamoKvPolicy::expire(TimeNs now) {
  for (auto& p : pods_) {
    for (auto it = p.index.begin(); it != p.index.end();) {
      if (it->second.expiry <= now) {
        it = p.index.erase(it);
        --index_entries_;
      } else {
        ++it;
      }
    }
  }
}

void DynamoKvPolicy::prune() {
  // PruneManager::prune: pop the earliest expiry first (for equal expiry the deeper block, as
  // BlockEntry orders by seq_position) until the index holds max x ratio blocks.
  const auto target = static_cast<std::int64_t>(static_cast<double>(max_tree_size_) * prune_ratio_);
  struct Victim {
    TimeNs expiry;
    std::int32_t position;
    int pod;
    BlockHash hash;
  };
  std::vector<Victim> all;
  all.reserve(static_cast<size_t>(index_entries_));
  for (size_t p = 0; p < pods_.size(); ++p) {
    for (const auto& [h, e] : pods_[p].index) {
      all.push_back({e.expiry, e.position, static_cast<int>(p), h});
    }
  }
  std::sort(all.begin(), all.end(), [](const Victim& a, const Victim& b) {
    if (a.expiry != b.expiry) return a.expiry < b.expiry;
    if (a.position != b.position) return a.position > b.position;
    if (a.pod != b.pod) return a.pod < b.pod;
    return a.hash < b.hash;
  });
  for (const Victim& v : all) {
    if (index_entries_ <= target) break;
    pods_[static_cast<size_t>(v.pod)].index.erase(v.hash);
    --index_entries_;
  }
}

int DynamoKvPolicy::pick(const Request& request, std::span<const PodState> candidates,
                         const RouteContext& ctx) {
  if (candidates.empty()) return -1;
  now_ = ctx.now;
  if (ttl_ > 0 && now_ >= next_expiry_sweep_) {
    expire(now_);
    next_expiry_sweep_ = now_ + ttl_;
  }
  std::vector<double> logits(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    logits[i] = cost(request, candidates[i].index, now_).logit;
  }
  const double lo = *std::min_element(logits.begin(), logits.end());
  const double hi = *std::max_element(logits.begin(), logits.end());
  if (temperature_ <= 0) {
    std::vector<size_t> tied;
    for (size_t i = 0; i < logits.size(); ++i) {
      if (logits[i] == lo) tied.push_back(i);
    }
    if (tied.size() == 1) return candidates[tied.front()].index;
    std::uniform_int_distribution<size_t> any(0, tied.size() - 1);
    return candidates[tied[any(rng_)]].index;
  }
  std::vector<double> probs(logits.size(), 1.0 / static_cast<double>(logits.size()));
  if (hi > lo) {
    double sum = 0;
    const double top = -lo / (hi - lo) / temperature_;
    for (size_t i = 0; i < logits.size(); ++i) {
      probs[i] = std::exp(-logits[i] / (hi - lo) / temperature_ - top);
      sum += probs[i];
    }
    for (double& p : probs) p /= sum;
  }
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  double cum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    cum += probs[i];
    if (u <= cum) return candidates[i].index;
  }
  return candidates.back().index;
}

void DynamoKvPolicy::on_dispatched(const Request& request, int pod) {
  if (pod < 0) return;
  release(request.id);  // a re-dispatched request replaces its earlier record
  const std::vector<BlockHash> hashes = prompt_blocks(request);
  const std::int32_t cached = overlap(pod, hashes, now_);
  isl_blocks_ += (request.prompt_tokens + block_size_ - 1) / block_size_;
  overlap_blocks_ += cached;

  WorkerView& s = state_for(pod);
  // The approximate indexer stores the routed blocks with a fresh expiry (approx.rs).
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto [it, fresh] = s.index.try_emplace(hashes[i]);
    it->second.expiry = now_ + ttl_;
    it->second.position = static_cast<std::int32_t>(i);
    if (fresh) ++index_entries_;
  }
  if (index_entries_ > max_tree_size_) prune();

  Active a;
  a.pod = pod;
  a.prefill_tokens = std::max<std::int64_t>(
      0, request.prompt_tokens - static_cast<std::int64_t>(cached) * block_size_);
  s.pending_prefill += a.prefill_tokens;
  if (track_active_blocks_) {
    a.blocks = hashes;
    for (const BlockHash h : hashes) ++s.active[h];
  }
  active_.emplace(request.id, std::move(a));
}

void DynamoKvPolicy::release(std::int64_t id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  WorkerView& s = state_for(it->second.pod);
  s.pending_prefill -= it->second.prefill_tokens;
  for (const BlockHash h : it->second.blocks) {
    auto b = s.active.find(h);
    if (b != s.active.end() && --b->second <= 0) s.active.erase(b);
  }
  active_.erase(it);
}

void DynamoKvPolicy::on_finished(const Request& request, int pod) {
  (void)pod;
  release(request.id);
}

void DynamoKvPolicy::mark_prefill_completed(std::int64_t id) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  state_for(it->second.pod).pending_prefill -= it->second.prefill_tokens;
  it->second.prefill_tokens = 0;
}

std::vector<PolicyCounter> DynamoKvPolicy::counters() const {
  const double rate = isl_blocks_ == 0
                          ? 0.0
                          : static_cast<double>(overlap_blocks_) / static_cast<double>(isl_blocks_);
  return {{"dynamo_kv_hit_rate_isl_blocks", static_cast<double>(isl_blocks_)},
          {"dynamo_kv_hit_rate_overlap_blocks", static_cast<double>(overlap_blocks_)},
          {"dynamo_kv_hit_rate", rate, true, static_cast<double>(isl_blocks_)},
          {"dynamo_approx_index_blocks", static_cast<double>(index_entries_)}};
}

namespace {

ParamSpec dynamo_spec() {
  return ParamSpec()
      .real("overlap_score_weight", 1.0,
            "weight of the prefill blocks in logit = weight x prefill_blocks + decode_blocks "
            "(KvRouterConfig overlap_score_weight)",
            0.0, 1e9)
      .real("router_temperature", 0.0,
            "0 = the minimum logit (ties at random); > 0 = softmax sampling over -logit / "
            "(max - min) / temperature (KvRouterConfig router_temperature)",
            0.0, 1e9)
      .real("router_ttl_s", 120.0,
            "approximate indexer: a routed block is believed cached for this long after it was "
            "last routed (KvRouterConfig router_ttl_secs, no-KV-events mode)",
            0.0, 1e9)
      .integer("router_max_tree_size", 1048576,
               "approximate indexer: blocks held before pruning (router_max_tree_size = 2^20)", 1,
               1e12)
      .real("router_prune_target_ratio", 0.8,
            "approximate indexer: prune down to this fraction of router_max_tree_size", 0.0, 1.0)
      .boolean("router_track_active_blocks", true,
               "count the active requests' distinct blocks as decode load "
               "(router_track_active_blocks)");
}

const PolicyRegistrar kDynamoRegistrar(
    "dynamo_kv",
    "NVIDIA Dynamo KV router: min over workers of overlap_weight x uncached prefill blocks + "
    "active decode blocks, approximate (no-KV-events) indexer (lib/llm/src/kv_router)",
    dynamo_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<DynamoKvPolicy>(p, ctx);
    });

}  // namespace

}  // namespace fleetsim
