#include "policies/common/request_key.h"

#include <gtest/gtest.h>

#include <set>

#include "policies/chwbl/chwbl.h"
#include "policies/common/pick.h"

namespace fleetsim {
namespace {

std::vector<PodState> pods_with_loads(std::initializer_list<double> loads) {
  std::vector<PodState> out;
  int i = 0;
  for (const double l : loads) {
    PodState p;
    p.index = i;
    p.name = "pod-" + std::to_string(i);
    p.inflight_requests = static_cast<std::int32_t>(l);
    out.push_back(p);
    ++i;
  }
  return out;
}

Params chwbl_params(const std::string& key) {
  Params p = PolicyRegistry::instance().get("chwbl", "policy").spec.defaults();
  p.set("key", key);
  return p;
}

TEST(PolicyCommonTest, KeyHashIsChwbls) {
  PolicyContext ctx;
  ctx.pod_names = {"pod-0", "pod-1", "pod-2"};
  const ConsistentHashPolicy by_prefix(chwbl_params("prefix"), ctx, true);
  const ConsistentHashPolicy by_session(chwbl_params("session"), ctx, true);
  for (std::uint64_t k = 1; k < 20; ++k) {
    Request r;
    r.model = "m";
    r.session = "s-" + std::to_string(k);
    r.prompt = {Segment{k * 13, 100}};
    EXPECT_EQ(request_key_hash(r, RequestKey::kPrefix), by_prefix.key_hash(r));
    EXPECT_EQ(request_key_hash(r, RequestKey::kSession), by_session.key_hash(r));
  }
}

TEST(PolicyCommonTest, HasKey) {
  Request r;
  EXPECT_TRUE(has_request_key(r, RequestKey::kPrefix));
  EXPECT_FALSE(has_request_key(r, RequestKey::kSession));
  r.session = "x";
  EXPECT_TRUE(has_request_key(r, RequestKey::kSession));
  EXPECT_THROW(parse_request_key("body"), ScenarioError);
  EXPECT_THROW(parse_tie_break("first"), ScenarioError);
}

TEST(PolicyCommonTest, ArgminAndTies) {
  Rng rng = make_rng(1, "t");
  const auto value = [](const PodState& p) { return static_cast<double>(p.inflight_requests); };
  EXPECT_EQ(argmin_candidate(pods_with_loads({3, 1, 2}), value, TieBreak::kRandom, rng), 1u);
  // Tied at 1: pods 1 and 2. lowest_index -> 1; random -> 1 or 2, both seen, never 0.
  const auto tied = pods_with_loads({4, 1, 1});
  EXPECT_EQ(argmin_candidate(tied, value, TieBreak::kLowestIndex, rng), 1u);
  std::set<size_t> seen;
  for (int i = 0; i < 100; ++i) seen.insert(argmin_candidate(tied, value, TieBreak::kRandom, rng));
  EXPECT_EQ(seen, (std::set<size_t>{1, 2}));
}

}  // namespace
}  // namespace fleetsim
