#include "policies/epp/approx_prefix_index.h"

#include <gtest/gtest.h>

#include "models/block_hash.h"

namespace fleetsim {
namespace {

std::vector<BlockHash> hs(std::initializer_list<BlockHash> v) { return v; }

TEST(ApproxPrefixIndexTest, LruEvictsTheLeastRecentlyWrittenBlock) {
  ApproxPrefixIndex index(3);
  index.add(0, hs({1, 2, 3}));
  EXPECT_EQ(index.size(0), 3);
  index.add(0, hs({4}));  // over capacity: block 1, the oldest, goes
  EXPECT_EQ(index.size(0), 3);
  EXPECT_FALSE(index.contains(0, 1));
  EXPECT_TRUE(index.contains(0, 2));
  EXPECT_TRUE(index.contains(0, 4));
  index.add(0, hs({2}));  // refresh 2: now 3 is the oldest
  index.add(0, hs({5}));
  EXPECT_FALSE(index.contains(0, 3));
  EXPECT_TRUE(index.contains(0, 2));
  EXPECT_TRUE(index.contains(0, 5));
  // An evicted block no longer matches for that pod.
  EXPECT_EQ(index.match(hs({1, 2}))[0], 0);
}

TEST(ApproxPrefixIndexTest, OnePromptLongerThanCapacityKeepsItsTail) {
  // Blocks go in prompt order, so a full LRU drops a prompt's leading blocks first, and the
  // match (which starts from the first block) then finds nothing: the index's blind spot.
  ApproxPrefixIndex index(4);
  index.add(0, hs({10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(index.size(0), 4);
  EXPECT_FALSE(index.contains(0, 10));
  EXPECT_TRUE(index.contains(0, 15));
  EXPECT_EQ(index.match(hs({10, 11, 12, 13, 14, 15}))[0], 0);
}

TEST(ApproxPrefixIndexTest, CapacityIsPerPod) {
  ApproxPrefixIndex index(2);
  index.add(0, hs({1, 2}));
  index.add(1, hs({3, 4}));
  EXPECT_EQ(index.size(0), 2);
  EXPECT_EQ(index.size(1), 2);
  EXPECT_TRUE(index.contains(0, 1));
}

TEST(ApproxPrefixIndexTest, MatchCountsLeadingBlocksAndStopsAtTheFirstMiss) {
  ApproxPrefixIndex index(100);
  index.add(0, hs({1, 2, 3}));
  index.add(2, hs({1, 2}));
  const auto m = index.match(hs({1, 2, 3, 4}));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], 3);
  EXPECT_EQ(m[1], 0);  // never written
  EXPECT_EQ(m[2], 2);
  // A first block no pod holds stops the walk: nothing matches even though 1, 2 are held.
  const auto none = index.match(hs({9, 1, 2}));
  EXPECT_EQ(none[0], 0);
  EXPECT_EQ(none[2], 0);
}

TEST(ApproxPrefixIndexTest, MatchStopsOnlyWhenNoPodHoldsABlock) {
  // GIE's matchLongestPrefix breaks at the first hash held by no pod; until then each pod counts
  // every hash it holds. Pod 0 lost block 2 but another pod holds it, so pod 0 still scores 1, 3.
  ApproxPrefixIndex index(100);
  index.add(0, hs({1, 3}));
  index.add(1, hs({1, 2, 3}));
  const auto m = index.match(hs({1, 2, 3}));
  EXPECT_EQ(m[0], 2);
  EXPECT_EQ(m[1], 3);
}

TEST(ApproxPrefixIndexTest, RemovePodForgetsItsBlocks) {
  ApproxPrefixIndex index(10);
  index.add(0, hs({1, 2}));
  index.add(1, hs({1, 2}));
  index.remove_pod(0);
  EXPECT_EQ(index.size(0), 0);
  const auto m = index.match(hs({1, 2}));
  EXPECT_EQ(m[0], 0);
  EXPECT_EQ(m[1], 2);
}

TEST(EppHashingTest, BlockTokens) {
  EXPECT_EQ(epp_block_tokens(64, 4.0), 16);
  EXPECT_EQ(epp_block_tokens(64, 3.0), 21);  // 21.33 rounds to 21
  EXPECT_EQ(epp_block_tokens(1, 4.0), 1);    // never below one token
}

Request make_request(std::int32_t system_tokens, std::int32_t question_tokens) {
  Request r;
  r.model = "m";
  r.prompt = {Segment{11, system_tokens}, Segment{12, question_tokens}};
  r.prompt_tokens = system_tokens + question_tokens;
  r.output_tokens = 40;
  r.output_content_id = 13;
  compute_block_hashes(r, 16);
  return r;
}

TEST(EppHashingTest, ReusesTheRequestsBlockHashesOrRecomputes) {
  const Request r = make_request(100, 30);  // 130 tokens: 8 full prompt blocks of 16
  const auto reused = prompt_prefix_hashes(r, 16, 256);
  EXPECT_EQ(reused.size(), 8u);  // the output's blocks are not part of the prompt
  Request bare = r;
  bare.block_hashes.reset();
  EXPECT_EQ(prompt_prefix_hashes(bare, 16, 256), reused);
  // Another block size hashes the prompt again: 130 / 8 = 16 blocks.
  EXPECT_EQ(prompt_prefix_hashes(r, 8, 256).size(), 16u);
}

TEST(EppHashingTest, TruncatesAndSkipsShortPrompts) {
  EXPECT_EQ(prompt_prefix_hashes(make_request(100, 30), 16, 5).size(), 5u);
  EXPECT_TRUE(prompt_prefix_hashes(make_request(10, 5), 16, 256).empty());  // under one block
}

TEST(EppHashingTest, ModelNameSeparatesEntries) {
  Request a = make_request(64, 0);
  Request b = a;
  b.model = "other";
  const auto ha = prompt_prefix_hashes(a, 16, 256);
  const auto hb = prompt_prefix_hashes(b, 16, 256);
  ASSERT_EQ(ha.size(), 4u);
  for (size_t i = 0; i < ha.size(); ++i) EXPECT_NE(ha[i], hb[i]);
}

}  // namespace
}  // namespace fleetsim
