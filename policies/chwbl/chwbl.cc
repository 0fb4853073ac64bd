#include "policies/chwbl/chwbl.h"

#include <xxhash.h>

#include <algorithm>
#include <cmath>

#include "sim/errors.h"

namespace fleetsim {

std::uint64_t HashRing::node_position(const std::string& name, int i) {
  const std::string label = name + "#" + std::to_string(i);
  return XXH3_64bits_withSeed(label.data(), label.size(), 0);
}

bool HashRing::has_pod(int pod) const {
  return pod >= 0 && static_cast<size_t>(pod) < on_ring_.size() &&
         on_ring_[static_cast<size_t>(pod)] != 0;
}

namespace {

bool ring_order(const HashRing::Node& a, const HashRing::Node& b) {
  return a.position != b.position ? a.position < b.position : a.pod < b.pod;
}

}  // namespace

bool HashRing::append_nodes(int pod, const std::string& name) {
  if (has_pod(pod)) return false;
  if (pod < 0) throw InternalError("HashRing: pod index " + std::to_string(pod));
  if (on_ring_.size() <= static_cast<size_t>(pod)) on_ring_.resize(static_cast<size_t>(pod) + 1, 0);
  on_ring_[static_cast<size_t>(pod)] = 1;
  for (int i = 0; i < vnodes_per_pod_; ++i) nodes_.push_back({node_position(name, i), pod});
  return true;
}

void HashRing::add_pod(int pod, const std::string& name) {
  const auto old_size = static_cast<std::ptrdiff_t>(nodes_.size());
  if (!append_nodes(pod, name)) return;
  // Sort the new nodes and merge them in: linear in the ring, not a sort of all of it.
  std::sort(nodes_.begin() + old_size, nodes_.end(), ring_order);
  std::inplace_merge(nodes_.begin(), nodes_.begin() + old_size, nodes_.end(), ring_order);
}

void HashRing::add_pods(const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) append_nodes(static_cast<int>(i), names[i]);
  std::sort(nodes_.begin(), nodes_.end(), ring_order);
}

namespace {

BoundRule bound_rule_named(const std::string& name) {
  if (name == "haproxy") return BoundRule::kHaproxy;
  if (name == "integer_mean") return BoundRule::kIntegerMean;
  return BoundRule::kCeil;
}

}  // namespace

ConsistentHashPolicy::ConsistentHashPolicy(const Params& params, const PolicyContext& ctx,
                                           bool bounded)
    : bounded_(bounded),
      key_is_session_(params.get_string("key") == "session"),
      balance_pct_(bounded ? std::llround(params.get_double("balance_factor") * 100.0) : 0),
      rule_(bound_rule_named(bounded ? params.get_string("bound_rule") : "ceil")),
      spill_least_loaded_(bounded && params.get_string("spill") == "least_loaded"),
      units_never_released_(bounded && params.get_string("load_release") == "never"),
      ring_(static_cast<int>(params.get_int("vnodes"))) {
  ring_.add_pods(ctx.pod_names);
}

std::uint64_t ConsistentHashPolicy::key_hash(const Request& request) const {
  if (key_is_session_) return XXH3_64bits(request.session.data(), request.session.size());
  // The leading bytes of the prompt (its first segment: the system prompt) and the model name.
  const std::uint64_t prefix = request.prefix_key();
  const std::uint64_t model = XXH3_64bits(request.model.data(), request.model.size());
  return XXH3_64bits_withSeed(&prefix, sizeof prefix, model);
}

void ConsistentHashPolicy::ensure_on_ring(std::span<const PodState> candidates) {
  // Pods the context did not name (e.g. added later) join the ring under their own name.
  for (const auto& pod : candidates) {
    if (!ring_.has_pod(pod.index)) ring_.add_pod(pod.index, pod.name);
  }
}

std::int64_t ConsistentHashPolicy::bound(BoundRule rule, std::int64_t served_total,
                                         std::int64_t balance_pct, std::int64_t n,
                                         std::int64_t candidate_rank) {
  if (rule == BoundRule::kCeil) {
    // ceil((served_total + 1) x pct / (100 n)) in integers, so 1.25 x 4 / 2 is exactly 2.5 -> 3.
    const std::int64_t den = 100 * n;
    return ((served_total + 1) * balance_pct + den - 1) / den;
  }
  if (rule == BoundRule::kIntegerMean) {
    // Older LoxiLB builds (common/sockproxy_lb.c chwbl_select_endpoint, commits 0c45fbe and
    // 5c09f08; the newest computes kCeil): the mean load in integers, the new request not
    // counted, times the factor rounded up; at least n while the total is under n. The integer
    // mean makes it tighter than kCeil: 15 in flight on 3 pods bound a pod at 9 (kCeil: 10), 5 in
    // flight at 2 (kCeil: 4).
    const std::int64_t by_mean = ((served_total / n) * balance_pct + 99) / 100;
    return std::max(by_mean, served_total < n ? n : std::int64_t{1});
  }
  // HAProxy chash_server_is_eligible (src/lb_chash.c): tot_slots = ceil((served + 1) x pct / 100),
  // split among servers by cumulative weight; with equal weights server k of n gets
  // floor((k+1) T / n) - floor(k T / n) slots (never 0), so the shares differ by at most one.
  const std::int64_t total_slots = ((served_total + 1) * balance_pct + 99) / 100;
  const std::int64_t slots =
      ((candidate_rank + 1) * total_slots) / n - (candidate_rank * total_slots) / n;
  return slots == 0 ? 1 : slots;
}

namespace {

// Index into `nodes` of the candidate node at or after `from` (wrapping), or -1 if none.
std::ptrdiff_t next_candidate(const std::vector<HashRing::Node>& nodes, std::ptrdiff_t from,
                              const std::vector<int>& rank_of) {
  const auto size = static_cast<std::ptrdiff_t>(nodes.size());
  for (std::ptrdiff_t step = 0; step < size; ++step) {
    const std::ptrdiff_t i = (from + step) % size;
    if (rank_of[static_cast<size_t>(nodes[static_cast<size_t>(i)].pod)] >= 0) return i;
  }
  return -1;
}

std::ptrdiff_t prev_candidate(const std::vector<HashRing::Node>& nodes, std::ptrdiff_t from,
                              const std::vector<int>& rank_of) {
  const auto size = static_cast<std::ptrdiff_t>(nodes.size());
  for (std::ptrdiff_t step = 0; step < size; ++step) {
    const std::ptrdiff_t i = ((from - step) % size + size) % size;
    if (rank_of[static_cast<size_t>(nodes[static_cast<size_t>(i)].pod)] >= 0) return i;
  }
  return -1;
}

// rank_of[pod index] = rank of that pod in pod-index order among the candidates, -1 otherwise,
// for every pod on the ring (`slots`): the ring keeps the pods that are not candidates now (down,
// deleted, not yet scaled up), and the highest of them may be above every candidate's index.
std::vector<int> candidate_ranks(std::span<const PodState> candidates, int slots) {
  std::vector<int> indices;
  int max_index = -1;
  for (const auto& pod : candidates) {
    indices.push_back(pod.index);
    max_index = std::max(max_index, pod.index);
  }
  std::sort(indices.begin(), indices.end());
  std::vector<int> rank_of(static_cast<size_t>(std::max(max_index + 1, slots)), -1);
  for (size_t r = 0; r < indices.size(); ++r) {
    rank_of[static_cast<size_t>(indices[r])] = static_cast<int>(r);
  }
  return rank_of;
}

// The starting node: the candidate node closest to `key`, before or after it; on a tie the one
// before, as chash_get_server_hash does (dp <= dn).
std::ptrdiff_t start_node(const std::vector<HashRing::Node>& nodes, std::uint64_t key,
                          const std::vector<int>& rank_of) {
  const auto ge =
      std::lower_bound(nodes.begin(), nodes.end(), key,
                       [](const HashRing::Node& n, std::uint64_t k) { return n.position < k; });
  const std::ptrdiff_t first_ge = ge - nodes.begin();
  const std::ptrdiff_t next = next_candidate(nodes, first_ge, rank_of);
  if (next < 0) return -1;
  const std::ptrdiff_t prev = prev_candidate(nodes, first_ge - 1, rank_of);
  // Unsigned subtraction wraps around the ring, as HAProxy's 32-bit arithmetic does.
  const std::uint64_t dp = key - nodes[static_cast<size_t>(prev)].position;
  const std::uint64_t dn = nodes[static_cast<size_t>(next)].position - key;
  return dp <= dn ? prev : next;
}

}  // namespace

std::vector<int> ConsistentHashPolicy::walk(std::uint64_t key,
                                            std::span<const PodState> candidates) {
  ensure_on_ring(candidates);
  const auto& nodes = ring_.nodes();
  const std::vector<int> rank_of = candidate_ranks(candidates, ring_.pod_slots());
  std::vector<int> out;
  const std::ptrdiff_t start = start_node(nodes, key, rank_of);
  if (start < 0) return out;
  const auto size = static_cast<std::ptrdiff_t>(nodes.size());
  for (std::ptrdiff_t step = 0; step < size; ++step) {
    const auto& node = nodes[static_cast<size_t>((start + step) % size)];
    if (rank_of[static_cast<size_t>(node.pod)] < 0) continue;
    if (std::find(out.begin(), out.end(), node.pod) == out.end()) out.push_back(node.pod);
  }
  return out;
}

int ConsistentHashPolicy::pick(const Request& request, std::span<const PodState> candidates,
                               const RouteContext& ctx) {
  (void)ctx;
  if (candidates.empty()) return -1;
  if (key_is_session_ && request.session.empty()) {
    // HAProxy applies round robin when the hashed header is absent (`balance hdr`); here: the
    // candidate with the smallest pod index at or after a counter, wrapping.
    const PodState* chosen = nullptr;
    const PodState* smallest = nullptr;
    for (const auto& pod : candidates) {
      if (pod.index >= next_rr_ && (chosen == nullptr || pod.index < chosen->index)) chosen = &pod;
      if (smallest == nullptr || pod.index < smallest->index) smallest = &pod;
    }
    if (chosen == nullptr) chosen = smallest;
    next_rr_ = chosen->index + 1;
    return chosen->index;
  }
  ensure_on_ring(candidates);
  const auto& nodes = ring_.nodes();
  const std::vector<int> rank_of = candidate_ranks(candidates, ring_.pod_slots());
  const std::ptrdiff_t start = start_node(nodes, key_hash(request), rank_of);
  if (start < 0) return candidates.front().index;
  const int first = nodes[static_cast<size_t>(start)].pod;
  if (!bounded_) return first;

  std::vector<std::int64_t> served(rank_of.size(), 0);
  std::int64_t served_total = 0;
  for (const auto& pod : candidates) {
    served[static_cast<size_t>(pod.index)] = load_of(pod);
    served_total += load_of(pod);
  }
  const auto n = static_cast<std::int64_t>(candidates.size());
  const auto size = static_cast<std::ptrdiff_t>(nodes.size());
  for (std::ptrdiff_t step = 0; step < size; ++step) {
    const int pod = nodes[static_cast<size_t>((start + step) % size)].pod;
    const int rank = rank_of[static_cast<size_t>(pod)];
    if (rank < 0) continue;
    if (served[static_cast<size_t>(pod)] < bound(rule_, served_total, balance_pct_, n, rank)) {
      return pod;
    }
    if (spill_least_loaded_) return least_loaded(candidates);
  }
  // No pod is eligible (impossible with c >= 1, since the bounds add up to more than the total).
  return first;
}

void ConsistentHashPolicy::on_dispatched(const Request& request, int pod) {
  (void)request;
  if (!units_never_released_ || pod < 0) return;
  if (units_.size() <= static_cast<size_t>(pod)) units_.resize(static_cast<size_t>(pod) + 1, 0);
  ++units_[static_cast<size_t>(pod)];
}

std::int64_t ConsistentHashPolicy::load_of(const PodState& pod) const {
  if (!units_never_released_) return pod.inflight_requests;
  const auto i = static_cast<size_t>(pod.index);
  return i < units_.size() ? units_[i] : 0;
}

int ConsistentHashPolicy::least_loaded(std::span<const PodState> candidates) const {
  const PodState* best = &candidates.front();
  std::int64_t best_load = load_of(*best);
  for (const auto& pod : candidates) {
    const std::int64_t load = load_of(pod);
    if (load < best_load || (load == best_load && pod.index < best->index)) {
      best = &pod;
      best_load = load;
    }
  }
  return best->index;
}

namespace {

ParamSpec ring_spec() {
  return ParamSpec()
      .text("key", "prefix",
            "what is hashed: 'prefix' = the leading bytes of the prompt (its first segment, the "
            "system prompt) plus the model name; 'session' = the request's session id",
            {"prefix", "session"})
      .integer("vnodes", 100, "virtual nodes per pod on the ring", 1, 100000);
}

const PolicyRegistrar kChwblRegistrar(
    "chwbl",
    "Consistent hashing with bounded loads (HAProxy hash-type consistent + hash-balance-factor)",
    ring_spec()
        .real("balance_factor", 1.25,
              "c: a pod is eligible while serving fewer than its share of (served_total + 1) x c "
              "in-flight requests (HAProxy hash-balance-factor / 100)",
              1.0, 100.0)
        .text("bound_rule", "ceil",
              "'ceil': bound = ceil((served_total + 1) x c / n) for every pod; 'haproxy': "
              "ceil((served_total + 1) x c) slots split in integers across the n pods in index "
              "order, as src/lb_chash.c chash_server_is_eligible does; 'integer_mean': "
              "max(ceil(floor(served_total / n) x c), n while served_total < n, else 1), as "
              "older LoxiLB builds do (common/sockproxy_lb.c chwbl_select_endpoint; the newest "
              "computes 'ceil')",
              {"ceil", "haproxy", "integer_mean"})
        .text("spill", "ring",
              "where a request goes when its key's pod is at its bound: 'ring' = the next "
              "eligible pod clockwise (HAProxy); 'least_loaded' = the pod with the fewest "
              "requests in flight, lowest index on a tie (LoxiLB common/sockproxy_lb.c)",
              {"ring", "least_loaded"})
        .text("load_release", "response_end",
              "when a request's unit of load is given back: 'response_end' = when its response "
              "ends, so the load is the requests in flight; 'never' = not within the run, as a "
              "gateway that adds a unit at every selection and gives it back only when the "
              "client's keep-alive connection closes does with a pooled client (LoxiLB "
              "sockproxy: chwbl_dec_load runs at client connection teardown), so the load is "
              "the requests dispatched so far",
              {"response_end", "never"}),
    [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<ConsistentHashPolicy>(p, ctx, /*bounded=*/true);
    });

const PolicyRegistrar kConsistentHashRegistrar(
    "consistent_hash",
    "Consistent hashing on a request key, no load bound (HAProxy hash-type "
    "consistent without hash-balance-factor)",
    ring_spec(), [](const Params& p, const PolicyContext& ctx) -> std::unique_ptr<RoutingPolicy> {
      return std::make_unique<ConsistentHashPolicy>(p, ctx, /*bounded=*/false);
    });

}  // namespace

}  // namespace fleetsim
