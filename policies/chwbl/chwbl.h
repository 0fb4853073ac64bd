// Consistent hashing on a request key, with or without bounded loads (CHWBL), modelled on HAProxy's
// `balance hash` + `hash-type consistent` + `hash-balance-factor` (src/lb_chash.c):
//  * a ring of virtual nodes per pod; a key starts at the ring node closest to its hash, on
//    either side (chash_get_server_hash compares the distance to the node before and after);
//  * with bounded loads, the walk goes clockwise from there to the first pod that is eligible
//    (chash_server_is_eligible), i.e. serves fewer requests than its share of
//    (served_total + 1) x balance_factor. Mirrokni, Thorup, Zadimoghaddam, arXiv:1608.01350;
//  * or (spill = least_loaded, LoxiLB's sockproxy) straight to the least-loaded pod instead.
// Pods that are not candidates (down) are out of the ring, as HAProxy dequeues a down server's
// nodes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace fleetsim {

// The ring: virtual nodes sorted by position.
class HashRing {
 public:
  struct Node {
    std::uint64_t position = 0;
    int pod = 0;
  };

  explicit HashRing(int vnodes_per_pod) : vnodes_per_pod_(vnodes_per_pod) {}
  // Adds pod `pod` (named `name`) unless it is already on the ring. Node i sits at
  // XXH3_64bits_withSeed("name#i", 0): a pod keeps its place whatever other pods exist.
  void add_pod(int pod, const std::string& name);
  // Pods 0, 1, ... named `names`, in one sort (add_pod one by one would sort n times).
  void add_pods(const std::vector<std::string>& names);
  bool has_pod(int pod) const;
  // One more than the largest pod index on the ring.
  int pod_slots() const { return static_cast<int>(on_ring_.size()); }
  const std::vector<Node>& nodes() const { return nodes_; }
  static std::uint64_t node_position(const std::string& name, int i);

 private:
  // Appends a new pod's nodes unsorted; false if the pod is already on the ring.
  bool append_nodes(int pod, const std::string& name);

  int vnodes_per_pod_;
  std::vector<Node> nodes_;    // sorted by (position, pod)
  std::vector<char> on_ring_;  // by pod index: asked once per candidate of every request
};

// How a pod's bound is computed from served_total, the number of candidates n and c.
enum class BoundRule {
  kCeil,         // served < ceil((served_total + 1) x c / n)  (the paper's bound, DESIGN.md)
  kHaproxy,      // HAProxy's integer split of ceil((served_total + 1) x c) slots by weight
  kIntegerMean,  // max(ceil(floor(served_total / n) x c), n if served_total < n else 1)
};

class ConsistentHashPolicy : public RoutingPolicy {
 public:
  // bounded = false: plain consistent hashing ("consistent_hash").
  ConsistentHashPolicy(const Params& params, const PolicyContext& ctx, bool bounded);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return !key_is_session_; }
  void on_dispatched(const Request& request, int pod) override;

  // The key's hash for `request` ("prefix": first prompt segment + model; "session": session id).
  std::uint64_t key_hash(const Request& request) const;
  // Pod-index order of candidates' ring nodes, starting at the node closest to `key`, one lap.
  std::vector<int> walk(std::uint64_t key, std::span<const PodState> candidates);
  // The most requests pod `candidate_rank` (its rank in pod-index order among n candidates) may
  // serve before it is skipped.
  static std::int64_t bound(BoundRule rule, std::int64_t served_total, std::int64_t balance_pct,
                            std::int64_t n, std::int64_t candidate_rank);

  const HashRing& ring() const { return ring_; }

 private:
  void ensure_on_ring(std::span<const PodState> candidates);
  // The load the bound compares: requests in flight, or units never released (load_release).
  std::int64_t load_of(const PodState& pod) const;
  int least_loaded(std::span<const PodState> candidates) const;

  bool bounded_;
  bool key_is_session_;
  std::int64_t balance_pct_;  // balance factor in percent, as HAProxy's hash-balance-factor
  BoundRule rule_;
  bool spill_least_loaded_;  // at the bound: the least-loaded pod, not the next on the ring
  bool units_never_released_;
  std::vector<std::int64_t> units_;  // per pod index: dispatches, when units are never released
  HashRing ring_;
  int next_rr_ = 0;  // round-robin fallback when the session key is absent
};

}  // namespace fleetsim
