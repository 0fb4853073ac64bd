// Rendezvous (highest random weight) hashing: every candidate gets a score h(key, pod name) and
// the highest score wins. Thaler and Ravishankar, "Using name-based mappings to increase hit
// rates" (IEEE/ACM ToN 1998); as a proxy load balancer: Envoy
// source/extensions/load_balancing_policies/rendezvous_hash/rendezvous_hash_lb.cc (chooseHost:
// argmax over hosts of a score of (request hash, host hash); equal weights here). Unlike a ring,
// no table: removing a pod moves only the keys it held, adding one takes ~1/n of the keys.
// Keys are chwbl's (policies/common/request_key.h). A request without the key (key = session,
// no session id) goes to a candidate drawn at random, as Envoy uses a random hash when the hash
// policy yields none (source/extensions/load_balancing_policies/common/thread_aware_lb_impl.cc).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "policies/common/request_key.h"
#include "policies/policy.h"

namespace fleetsim {

class HrwPolicy : public RoutingPolicy {
 public:
  HrwPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  bool reads_engine_state() const override { return false; }
  bool follows_prompt_content() const override { return key_ == RequestKey::kPrefix; }

  // The weight of `pod_name` for key hash `key`: XXH3_64bits_withSeed(pod name, seed = key).
  static std::uint64_t score(std::uint64_t key, const std::string& pod_name);
  // The candidate (its PodState::index) with the highest score for `key`; ties (a 2^-64 event)
  // go to the smaller pod index so the choice never depends on the candidates' order.
  static int choose(std::uint64_t key, std::span<const PodState> candidates);

 private:
  RequestKey key_;
  Rng rng_;  // only for requests without a key
};

}  // namespace fleetsim
