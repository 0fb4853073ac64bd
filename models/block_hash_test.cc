#include "models/block_hash.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

constexpr std::uint64_t kSys = 11;
constexpr std::uint64_t kQ1 = 21;
constexpr std::uint64_t kQ2 = 22;
constexpr std::uint64_t kAns = 31;

std::vector<BlockHash> hb(std::vector<Segment> segments, std::int32_t block_size = 16) {
  return hash_blocks(segments, block_size);
}

TEST(BlockHash, OnlyFullBlocksAreHashed) {
  EXPECT_EQ(hb({{kSys, 35}}).size(), 2u);  // 35 / 16 = 2, the 3 leftover tokens get no hash
  EXPECT_EQ(hb({{kSys, 32}}).size(), 2u);
  EXPECT_EQ(hb({{kSys, 15}}).size(), 0u);
  EXPECT_EQ(hb({}).size(), 0u);
  EXPECT_EQ(hb({{kSys, 10}, {kQ1, 6}}).size(), 1u);  // two segments filling one block
  EXPECT_EQ(hb({{kSys, 7}}, 1).size(), 7u);
}

TEST(BlockHash, EqualContentGivesEqualHashesExactlyWhereContentMatches) {
  // 40 system tokens then 30 question tokens: blocks 0 and 1 (tokens 0..31) are system prompt
  // only; block 2 (32..47) mixes system tokens 32..39 with the question.
  const auto a = hb({{kSys, 40}, {kQ1, 30}});
  const auto b = hb({{kSys, 40}, {kQ2, 30}});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(a[0], b[0]);
  EXPECT_EQ(a[1], b[1]);
  EXPECT_NE(a[2], b[2]);
  EXPECT_NE(a[3], b[3]);
  EXPECT_EQ(a, hb({{kSys, 40}, {kQ1, 30}}));  // deterministic
}

TEST(BlockHash, ExtendingAPromptKeepsItsHashes) {
  const auto turn1 = hb({{kSys, 40}, {kQ1, 30}});
  const auto turn2 = hb({{kSys, 40}, {kQ1, 30}, {kAns, 50}, {kQ2, 8}});
  ASSERT_EQ(turn1.size(), 4u);  // 70 / 16
  ASSERT_EQ(turn2.size(), 8u);  // 128 / 16
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(turn1[i], turn2[i]) << i;
}

TEST(BlockHash, ChangeInBlockZeroChangesEveryLaterHash) {
  // Blocks 1..3 cover the same tokens (system 0..47) in both, but their parents differ.
  const auto a = hb({{kQ1, 16}, {kSys, 48}});
  const auto b = hb({{kQ2, 16}, {kSys, 48}});
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NE(a[i], b[i]) << i;
}

TEST(BlockHash, SegmentBoundaryInsideABlock) {
  const auto base = hb({{kSys, 10}, {kQ1, 22}});  // block 0 = sys 0..9 + q1 0..5
  ASSERT_EQ(base.size(), 2u);
  // Same first block, different second block (q1 6..21 vs q2 0..15).
  const auto diverge = hb({{kSys, 10}, {kQ1, 6}, {kQ2, 16}});
  ASSERT_EQ(diverge.size(), 2u);
  EXPECT_EQ(base[0], diverge[0]);
  EXPECT_NE(base[1], diverge[1]);
  // Moving the boundary changes the block's tokens, hence its hash.
  EXPECT_NE(base[0], hb({{kSys, 8}, {kQ1, 24}})[0]);
  // A different second segment inside block 0 changes block 0.
  EXPECT_NE(base[0], hb({{kSys, 10}, {kQ2, 22}})[0]);
  // An empty segment adds no tokens.
  EXPECT_EQ(base, hb({{kSys, 10}, {kAns, 0}, {kQ1, 22}}));
  // Repeating a content id restarts its tokens at offset 0: not the same as one long segment.
  EXPECT_NE(hb({{kSys, 16}})[0], hb({{kSys, 8}, {kSys, 8}})[0]);
}

TEST(BlockHash, HashesWithinASequenceAreDistinct) {
  const auto h = hb({{kSys, 1000}, {kQ1, 600}});
  ASSERT_EQ(h.size(), 100u);
  EXPECT_EQ(std::set<BlockHash>(h.begin(), h.end()).size(), h.size());
}

TEST(BlockHash, RootSeedsSeparateFamilies) {
  const std::vector<Segment> s = {{kSys, 32}};
  const auto a = hash_blocks(s, 16);
  const auto b = hash_blocks(s, 16, kDefaultRootHash + 1);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_NE(a[0], b[0]);
  EXPECT_NE(a[1], b[1]);
  EXPECT_EQ(a, hash_blocks(s, 16, kDefaultRootHash));
}

TEST(BlockHash, BlockSizeChangesHashes) {
  const auto b16 = hb({{kSys, 64}}, 16);
  const auto b32 = hb({{kSys, 64}}, 32);
  ASSERT_EQ(b16.size(), 4u);
  ASSERT_EQ(b32.size(), 2u);
  EXPECT_NE(b16[1], b32[0]);
}

TEST(BlockHash, RejectsNonPositiveBlockSize) {
  const std::vector<Segment> s = {{kSys, 32}};
  EXPECT_THROW(hash_blocks(s, 0), InternalError);
  EXPECT_THROW(hash_blocks(s, -16), InternalError);
}

TEST(BlockHash, TotalTokens) {
  const std::vector<Segment> s = {{kSys, 40}, {kQ1, 0}, {kQ2, 30}};
  EXPECT_EQ(total_tokens(s), 70);
  EXPECT_EQ(total_tokens(std::span<const Segment>{}), 0);
}

TEST(BlockHash, ComputeBlockHashesCoversPromptAndOutput) {
  Request r;
  r.prompt = {{kSys, 40}, {kQ1, 30}};
  r.prompt_tokens = 70;
  r.output_tokens = 20;
  r.output_content_id = kAns;
  compute_block_hashes(r, 16);
  ASSERT_NE(r.block_hashes, nullptr);
  EXPECT_EQ(r.hash_block_size, 16);
  EXPECT_EQ(r.block_hashes->size(), 5u);  // 90 / 16
  EXPECT_EQ(*r.block_hashes, hb({{kSys, 40}, {kQ1, 30}, {kAns, 20}}));
  const auto prompt_only = hb(r.prompt);
  ASSERT_EQ(prompt_only.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ((*r.block_hashes)[i], prompt_only[i]) << i;
}

Request chat_turn(std::int64_t conversation, std::vector<Segment> prompt, std::uint64_t answer,
                  std::int32_t answer_tokens) {
  Request r;
  r.conversation = conversation;
  r.prompt = std::move(prompt);
  r.prompt_tokens = total_tokens(r.prompt);
  r.output_content_id = answer;
  r.output_tokens = answer_tokens;
  return r;
}

std::vector<BlockHash> from_scratch(Request r) {
  compute_block_hashes(r, 16);
  return *r.block_hashes;
}

TEST(RequestHasher, ATurnThatResendsItsHistoryHashesAsFromScratch) {
  RequestHasher hasher(16);
  // Turn 2 resends turn 1's prompt and answer; the answer ends inside a block (40+30+21 tokens).
  Request t1 = chat_turn(7, {{kSys, 40}, {kQ1, 30}}, kAns, 21);
  Request t2 = chat_turn(7, {{kSys, 40}, {kQ1, 30}, {kAns, 21}, {kQ2, 50}}, kAns + 1, 9);
  const std::vector<Request> turns = {t1, t2};
  for (Request r : turns) {
    hasher.hash(r);
    EXPECT_EQ(r.hash_block_size, 16);
    EXPECT_EQ(*r.block_hashes, from_scratch(r));
  }
}

TEST(RequestHasher, AHistoryThatDiffersIsHashedFromTheStart) {
  RequestHasher hasher(16);
  Request t1 = chat_turn(3, {{kSys, 40}, {kQ1, 30}}, kAns, 40);
  hasher.hash(t1);
  // The answer was cut short (a failed turn): the next prompt holds 20 of its 40 tokens.
  Request t2 = chat_turn(3, {{kSys, 40}, {kQ1, 30}, {kAns, 20}, {kQ2, 10}}, kAns + 1, 5);
  hasher.hash(t2);
  EXPECT_EQ(*t2.block_hashes, from_scratch(t2));
}

TEST(RequestHasher, ConversationsSharingASlotAndRequestsWithoutOneHashCorrectly) {
  RequestHasher hasher(16, 1);  // every conversation maps to the one slot
  std::vector<Request> requests = {chat_turn(1, {{kSys, 64}}, kAns, 16),
                                   chat_turn(2, {{kSys, 64}, {kAns, 16}}, kAns, 16),
                                   chat_turn(1, {{kSys, 64}, {kAns, 16}, {kQ1, 8}}, kAns + 2, 30),
                                   chat_turn(-1, {{kSys, 64}, {kAns, 16}}, kAns, 3)};
  for (Request& r : requests) {
    hasher.hash(r);
    EXPECT_EQ(*r.block_hashes, from_scratch(r));
  }
}

}  // namespace
}  // namespace fleetsim
