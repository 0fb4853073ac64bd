#include "models/host_kv_tier.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

TEST(HostKvTier, LoadsTheLeadingRunFromAnOffset) {
  HostKvTier t(8);
  for (BlockHash h : {10, 11, 12, 14}) t.store(h);
  const std::vector<BlockHash> prompt = {10, 11, 12, 13, 14};
  EXPECT_EQ(t.load(prompt, 0, 10), 3);  // stops at 13
  EXPECT_EQ(t.load(prompt, 1, 10), 2);
  EXPECT_EQ(t.load(prompt, 1, 1), 1);   // the limit
  EXPECT_EQ(t.load(prompt, 3, 10), 0);  // 13 is missing
  EXPECT_EQ(t.load(prompt, 5, 10), 0);  // past the end
}

TEST(HostKvTier, EvictsTheLeastRecentlyUsed) {
  HostKvTier t(3);
  t.store(1);
  t.store(2);
  t.store(3);
  const std::vector<BlockHash> one = {1};
  EXPECT_EQ(t.load(one, 0, 1), 1);  // 1 is now the most recent; 2 the least
  t.store(4);
  EXPECT_FALSE(t.holds(2));
  EXPECT_TRUE(t.holds(1));
  t.store(3);  // a refresh, not a new entry
  t.store(5);
  EXPECT_FALSE(t.holds(1));
  EXPECT_TRUE(t.holds(3));
  EXPECT_TRUE(t.holds(4));
  EXPECT_TRUE(t.holds(5));
  EXPECT_EQ(t.size(), 3);
  EXPECT_FALSE(t.store(5));  // held: refreshed, not stored again
  EXPECT_TRUE(t.store(6));
  EXPECT_EQ(t.evictions(), 3);
}

TEST(HostKvTier, ACapacityOfNothingIsRefused) {
  EXPECT_THROW(HostKvTier(0), ScenarioError);
  HostKvTier one(1);
  one.store(7);
  one.store(8);
  EXPECT_TRUE(one.holds(8));
  EXPECT_FALSE(one.holds(7));
}

}  // namespace
}  // namespace fleetsim
