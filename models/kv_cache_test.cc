#include "models/kv_cache.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "sim/errors.h"

namespace fleetsim {
namespace {

using Hashes = std::vector<BlockHash>;

TEST(KvBlockCache, RejectsBadShape) {
  EXPECT_THROW(KvBlockCache(0, 16, true), InternalError);
  EXPECT_THROW(KvBlockCache(-1, 16, true), InternalError);
  EXPECT_THROW(KvBlockCache(8, 0, true), InternalError);
  EXPECT_THROW(KvBlockCache(8, -4, false), InternalError);
}

TEST(KvBlockCache, StartsEmpty) {
  KvBlockCache c(10, 16, true);
  EXPECT_EQ(c.num_blocks(), 10);
  EXPECT_EQ(c.block_size(), 16);
  EXPECT_EQ(c.num_free_blocks(), 10);
  EXPECT_DOUBLE_EQ(c.usage(), 0.0);
  EXPECT_EQ(c.num_cached_blocks(), 0);
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_TRUE(c.prefix_caching());
  EXPECT_EQ(c.blocks_held(1), 0);
  c.check_invariants();
}

TEST(KvBlockCache, APoolOfMillionsCostsWhatItUses) {
  // A pod of a big tensor-parallel group: 2^31 - 1 blocks. Only touched blocks are stored, and
  // untouched ones still come off the queue before any released block, in index order.
  KvBlockCache c(2'147'483'647, 16, true);
  EXPECT_EQ(c.num_free_blocks(), 2'147'483'647);
  const std::vector<BlockHash> h = {11, 12, 13};
  ASSERT_TRUE(c.allocate(1, h, 0, 48));
  c.cache_full_blocks(1, h, 48);
  c.free(1);
  ASSERT_TRUE(c.allocate(2, {}, 0, 16 * 1000));
  EXPECT_EQ(c.num_cached_blocks(), 3);  // request 2 took untouched blocks, not the cached ones
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.num_free_blocks(), 2'147'483'647 - 1000);
  c.check_invariants();
}

TEST(KvBlockCache, AllocateRoundsUpAndGrows) {
  KvBlockCache c(10, 16, true);
  ASSERT_TRUE(c.allocate(1, {}, 0, 33));  // ceil(33 / 16) = 3
  EXPECT_EQ(c.blocks_held(1), 3);
  EXPECT_EQ(c.num_free_blocks(), 7);
  EXPECT_DOUBLE_EQ(c.usage(), 0.3);
  ASSERT_TRUE(c.allocate(1, {}, 0, 48));  // still 3
  EXPECT_EQ(c.blocks_held(1), 3);
  ASSERT_TRUE(c.allocate(1, {}, 0, 49));  // 4
  EXPECT_EQ(c.blocks_held(1), 4);
  EXPECT_EQ(c.num_free_blocks(), 6);
  ASSERT_TRUE(c.allocate(1, {}, 0, 20));  // never shrinks
  EXPECT_EQ(c.blocks_held(1), 4);
  c.check_invariants();
  c.free(1);
  EXPECT_EQ(c.blocks_held(1), 0);
  EXPECT_EQ(c.num_free_blocks(), 10);
  c.free(1);  // unknown id: nothing happens
  c.check_invariants();
}

TEST(KvBlockCache, LookupCapLeavesLastTokenToCompute) {
  KvBlockCache c(10, 16, true);
  const Hashes h = {101, 102, 103};
  ASSERT_TRUE(c.allocate(1, h, 0, 48));
  c.cache_full_blocks(1, h, 48);
  ASSERT_EQ(c.num_cached_blocks(), 3);
  EXPECT_EQ(c.lookup(h, 32), 1);  // (32 - 1) / 16 = 1
  EXPECT_EQ(c.lookup(h, 33), 2);  // (33 - 1) / 16 = 2
  EXPECT_EQ(c.lookup(h, 48), 2);
  EXPECT_EQ(c.lookup(h, 49), 3);
  EXPECT_EQ(c.lookup(h, 1000), 3);  // no more hashes than given
  EXPECT_EQ(c.lookup(h, 16), 0);
  EXPECT_EQ(c.lookup(h, 1), 0);
  EXPECT_EQ(c.lookup(h, 0), 0);
  EXPECT_EQ(c.lookup({}, 100), 0);
}

TEST(KvBlockCache, LookupStopsAtFirstMiss) {
  KvBlockCache c(10, 4, true);
  const Hashes h = {1, 2, 3};
  ASSERT_TRUE(c.allocate(1, h, 0, 12));
  c.cache_full_blocks(1, h, 12);
  EXPECT_EQ(c.lookup(Hashes{1, 2, 3}, 100), 3);
  EXPECT_EQ(c.lookup(Hashes{1, 99, 3}, 100), 1);
  EXPECT_EQ(c.lookup(Hashes{99, 2, 3}, 100), 0);
  EXPECT_EQ(c.lookup(Hashes{1, 2, 99}, 100), 2);
}

TEST(KvBlockCache, EvictsLeastRecentlyFreedAndTailFirst) {
  // 6 blocks of 4 tokens. A gets blocks 0,1 and B gets 2,3; the queue keeps 4,5.
  KvBlockCache c(6, 4, true);
  const Hashes ha = {101, 102};
  const Hashes hb = {201, 202};
  ASSERT_TRUE(c.allocate(1, ha, 0, 8));
  ASSERT_TRUE(c.allocate(2, hb, 0, 8));
  c.cache_full_blocks(1, ha, 8);
  c.cache_full_blocks(2, hb, 8);
  c.free(1);  // queue 4,5,1,0 (reverse order)
  c.free(2);  // queue 4,5,1,0,3,2
  c.check_invariants();
  EXPECT_EQ(c.num_free_blocks(), 6);
  EXPECT_EQ(c.num_cached_blocks(), 4);
  EXPECT_EQ(c.lookup(ha, 9), 2);
  EXPECT_EQ(c.lookup(hb, 9), 2);

  // Three blocks: 4, 5 (never hashed) then 1, A's tail.
  ASSERT_TRUE(c.allocate(3, {}, 0, 12));
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_EQ(c.num_cached_blocks(), 3);
  EXPECT_EQ(c.lookup(ha, 9), 1);
  EXPECT_EQ(c.lookup(hb, 9), 2);

  // Next comes 0, A's head; B (freed later) is untouched.
  ASSERT_TRUE(c.allocate(4, {}, 0, 4));
  EXPECT_EQ(c.evictions(), 2);
  EXPECT_EQ(c.lookup(ha, 9), 0);
  EXPECT_EQ(c.lookup(hb, 9), 2);

  // Then 3 (B's tail) and 2 (B's head).
  ASSERT_TRUE(c.allocate(5, {}, 0, 4));
  EXPECT_EQ(c.lookup(hb, 9), 1);
  ASSERT_TRUE(c.allocate(6, {}, 0, 4));
  EXPECT_EQ(c.lookup(hb, 9), 0);
  EXPECT_EQ(c.evictions(), 4);
  EXPECT_EQ(c.num_cached_blocks(), 0);
  EXPECT_EQ(c.num_free_blocks(), 0);
  EXPECT_FALSE(c.allocate(7, {}, 0, 1));
  c.check_invariants();
}

TEST(KvBlockCache, HitOnFreeBlockTakesItOutOfTheQueue) {
  KvBlockCache c(4, 4, true);
  const Hashes h = {1, 2, 3};
  ASSERT_TRUE(c.allocate(1, h, 0, 8));  // blocks 0,1
  c.cache_full_blocks(1, h, 8);
  c.free(1);  // queue 2,3,1,0, with 1 and 0 still hashed
  EXPECT_EQ(c.num_free_blocks(), 4);

  ASSERT_EQ(c.lookup(h, 9), 2);
  ASSERT_TRUE(c.allocate(2, h, 2, 9));  // touches 0 and 1, pops 2
  EXPECT_EQ(c.blocks_held(2), 3);
  EXPECT_EQ(c.num_free_blocks(), 1);
  EXPECT_EQ(c.evictions(), 0);
  c.check_invariants();

  // Only block 3 is left; taking it evicts nothing because the hits left the queue.
  ASSERT_TRUE(c.allocate(3, {}, 0, 4));
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.num_cached_blocks(), 2);
  EXPECT_EQ(c.lookup(h, 9), 2);
  EXPECT_FALSE(c.allocate(4, {}, 0, 4));
  c.check_invariants();
}

TEST(KvBlockCache, FailedAllocationChangesNothing) {
  KvBlockCache c(4, 4, true);
  const Hashes h = {1, 2, 3, 4, 5};
  ASSERT_TRUE(c.allocate(1, h, 0, 8));
  c.cache_full_blocks(1, h, 8);
  c.free(1);  // 4 free blocks, two of them (0, 1) cached

  // 5 blocks wanted, 2 of them hits: 3 new + 2 hits leaving the queue = 5 > 4.
  EXPECT_FALSE(c.can_allocate(2, h, 2, 20));
  EXPECT_FALSE(c.allocate(2, h, 2, 20));
  EXPECT_EQ(c.blocks_held(2), 0);
  EXPECT_EQ(c.num_free_blocks(), 4);
  EXPECT_EQ(c.num_cached_blocks(), 2);
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.lookup(h, 20), 2);
  c.check_invariants();

  // 4 blocks: 2 new + 2 hits fits exactly.
  EXPECT_TRUE(c.can_allocate(2, h, 2, 16));
  ASSERT_TRUE(c.allocate(2, h, 2, 16));
  EXPECT_EQ(c.num_free_blocks(), 0);
  EXPECT_EQ(c.evictions(), 0);

  // Growing past capacity fails and keeps what the request holds.
  EXPECT_FALSE(c.can_allocate(2, h, 2, 17));
  EXPECT_FALSE(c.allocate(2, h, 2, 17));
  EXPECT_EQ(c.blocks_held(2), 4);
  c.check_invariants();
}

TEST(KvBlockCache, SharedPrefixRefCounts) {
  KvBlockCache c(8, 4, true);
  const Hashes ha = {1, 2, 3};
  const Hashes hb = {1, 2, 9};
  ASSERT_TRUE(c.allocate(1, ha, 0, 12));  // blocks 0,1,2
  c.cache_full_blocks(1, ha, 12);
  ASSERT_EQ(c.lookup(hb, 12), 2);         // capped at (12 - 1) / 4 = 2 anyway
  ASSERT_TRUE(c.allocate(2, hb, 2, 12));  // shares 0,1 (ref 2), takes 3
  c.cache_full_blocks(2, hb, 12);         // registers block 3 under 9
  EXPECT_EQ(c.num_free_blocks(), 4);
  EXPECT_EQ(c.num_cached_blocks(), 4);
  c.check_invariants();

  c.free(1);  // only block 2 reaches ref 0; queue 4,5,6,7,2
  EXPECT_EQ(c.num_free_blocks(), 5);
  EXPECT_EQ(c.blocks_held(2), 3);
  c.check_invariants();
  c.free(2);  // queue 4,5,6,7,2,3,1,0
  EXPECT_EQ(c.num_free_blocks(), 8);
  c.check_invariants();

  ASSERT_TRUE(c.allocate(3, {}, 0, 20));  // pops 4,5,6,7,2: evicts hash 3 only
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_EQ(c.lookup(ha, 13), 2);
  EXPECT_EQ(c.lookup(hb, 13), 3);
  c.check_invariants();
}

TEST(KvBlockCache, CachesOnlyFullBlocks) {
  KvBlockCache c(8, 4, true);
  const Hashes h = {1, 2, 3};
  ASSERT_TRUE(c.allocate(1, h, 0, 10));  // 3 blocks, the last one half full
  c.cache_full_blocks(1, h, 7);          // 1 full block
  EXPECT_EQ(c.num_cached_blocks(), 1);
  c.cache_full_blocks(1, h, 10);  // 2 full blocks
  EXPECT_EQ(c.num_cached_blocks(), 2);
  EXPECT_EQ(c.lookup(h, 100), 2);
  c.cache_full_blocks(1, h, 10);  // idempotent
  EXPECT_EQ(c.num_cached_blocks(), 2);
  c.cache_full_blocks(1, h, 100);  // never past the blocks held
  EXPECT_EQ(c.num_cached_blocks(), 3);
  c.check_invariants();

  // Hashes shorter than the full blocks: register what exists, the rest later.
  const Hashes g = {11, 12, 13};
  ASSERT_TRUE(c.allocate(2, g, 0, 12));
  c.cache_full_blocks(2, std::span(g).first(1), 12);
  EXPECT_EQ(c.lookup(g, 100), 1);
  c.cache_full_blocks(2, g, 12);
  EXPECT_EQ(c.lookup(g, 100), 3);
  c.cache_full_blocks(99, g, 12);  // unknown request: nothing
  c.check_invariants();
}

TEST(KvBlockCache, DuplicateHashIsNotRemapped) {
  KvBlockCache c(2, 4, true);
  const Hashes h = {7};
  ASSERT_TRUE(c.allocate(1, h, 0, 4));  // block 0
  c.cache_full_blocks(1, h, 4);
  ASSERT_TRUE(c.allocate(2, h, 0, 4));  // block 1, same content computed again
  c.cache_full_blocks(2, h, 4);         // hash 7 stays on block 0; block 1 unhashed
  EXPECT_EQ(c.num_cached_blocks(), 1);
  c.check_invariants();
  c.free(2);                             // queue 1
  c.free(1);                             // queue 1,0
  ASSERT_TRUE(c.allocate(3, {}, 0, 4));  // pops 1: nothing to evict
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.lookup(h, 5), 1);
  ASSERT_TRUE(c.allocate(4, {}, 0, 4));  // pops 0: evicts 7
  EXPECT_EQ(c.evictions(), 1);
  EXPECT_EQ(c.lookup(h, 5), 0);
  c.check_invariants();
}

TEST(KvBlockCache, PrefixCachingDisabled) {
  KvBlockCache c(8, 4, false);
  EXPECT_FALSE(c.prefix_caching());
  const Hashes h = {1, 2};
  ASSERT_TRUE(c.allocate(1, h, 0, 8));
  c.cache_full_blocks(1, h, 8);
  EXPECT_EQ(c.num_cached_blocks(), 0);
  EXPECT_EQ(c.lookup(h, 100), 0);
  c.free(1);
  EXPECT_EQ(c.lookup(h, 100), 0);
  EXPECT_THROW(c.allocate(2, h, 1, 8), InternalError);
  EXPECT_EQ(c.evictions(), 0);
  c.check_invariants();
}

TEST(KvBlockCache, RejectsCallerBugs) {
  KvBlockCache c(8, 4, true);
  const Hashes h = {1, 2};
  EXPECT_THROW(c.allocate(1, h, 1, 8), InternalError);   // hash 1 is not cached
  EXPECT_THROW(c.allocate(1, h, 3, 12), InternalError);  // more hits than hashes
  EXPECT_THROW(c.allocate(1, h, 2, 4), InternalError);   // more hits than blocks
  EXPECT_THROW(c.allocate(1, h, -1, 4), InternalError);
  EXPECT_EQ(c.blocks_held(1), 0);
  EXPECT_EQ(c.num_free_blocks(), 8);
  c.check_invariants();
}

void fuzz_keeps_invariants(SlidingWindowBlocks sliding) {
  constexpr std::int32_t kBlockSize = 4;
  KvBlockCache c(64, kBlockSize, true, sliding);
  std::mt19937_64 rng(20240611);
  // Requests draw hashes from a few prefix families so that hits, sharing and evictions all occur.
  const auto hashes_for = [](std::int64_t id) {
    Hashes h;
    const auto family = static_cast<BlockHash>(id % 4);
    const auto shared = static_cast<size_t>(id % 7);
    for (size_t i = 0; i < 24; ++i) {
      h.push_back(i < shared ? (family << 32) + i + 1 : (static_cast<BlockHash>(id) << 40) + i);
    }
    return h;
  };
  std::map<std::int64_t, std::int32_t> tokens;  // live request -> tokens allocated
  std::int64_t next_id = 1;
  std::int32_t allocated = 0;
  std::int32_t refused = 0;
  std::int64_t hit_blocks = 0;
  for (int op = 0; op < 2000; ++op) {
    const auto kind = rng() % 8;  // 4/8 new, 2/8 grow, 2/8 free: the pool fills up
    if (kind < 4 || tokens.empty()) {
      const std::int64_t id = next_id++;
      const Hashes h = hashes_for(id);
      const auto n = static_cast<std::int32_t>(1 + rng() % 90);
      const std::int32_t hit = c.lookup(h, n);
      ASSERT_LE(hit, (n - 1) / kBlockSize);
      const std::int32_t free_before = c.num_free_blocks();
      // One new request in four is a loaded prompt: all but its last token count as computed.
      const bool loaded = rng() % 4 == 0;
      const std::int32_t computed = loaded ? n - 1 : -1;
      const bool can = c.can_allocate(id, h, hit, n, computed);
      ASSERT_EQ(c.allocate(id, h, hit, n, computed), can);
      if (can) {
        ++allocated;
        hit_blocks += hit;
        tokens[id] = n;
        // The window takes every position from the one its hit needs on, or from the first
        // a loaded prompt's last window needs.
        const std::int32_t chain = (n + kBlockSize - 1) / kBlockSize;
        const std::int32_t span = std::max(sliding.full_groups, 1);
        std::int32_t first_span = std::max(0, hit - (sliding.window_blocks - 1)) / span;
        if (loaded) {
          const std::int32_t window_tokens = (sliding.window_blocks - 1) * kBlockSize + 1;
          first_span =
              std::max(first_span, std::max(0, computed - window_tokens + 1) / kBlockSize / span);
        }
        const std::int32_t spans = (chain + span - 1) / span - first_span;
        ASSERT_EQ(c.blocks_held(id), chain + sliding.groups * spans);
        c.cache_full_blocks(id, h, n);
      } else {
        ++refused;
        ASSERT_EQ(c.num_free_blocks(), free_before);
        ASSERT_EQ(c.blocks_held(id), 0);
      }
    } else if (kind < 6) {  // grow a running request by a few decode tokens
      auto it = tokens.begin();
      std::advance(it, static_cast<long>(rng() % tokens.size()));
      const std::int32_t n = it->second + static_cast<std::int32_t>(1 + rng() % 8);
      const Hashes h = hashes_for(it->first);
      const std::int32_t held = c.blocks_held(it->first);
      const bool can = c.can_allocate(it->first, h, 0, n);
      ASSERT_EQ(c.allocate(it->first, h, 0, n), can);
      if (can) {
        it->second = n;
        c.cache_full_blocks(it->first, h, n);
      } else {
        ASSERT_EQ(c.blocks_held(it->first), held);
      }
    } else {
      auto it = tokens.begin();
      std::advance(it, static_cast<long>(rng() % tokens.size()));
      c.free(it->first);
      ASSERT_EQ(c.blocks_held(it->first), 0);
      tokens.erase(it);
    }
    ASSERT_NO_THROW(c.check_invariants()) << "op " << op;
    ASSERT_GE(c.num_free_blocks(), 0);
    ASSERT_LE(c.num_cached_blocks(), c.num_blocks());
  }
  // The run must have exercised both outcomes and the eviction path.
  EXPECT_GT(allocated, 100);
  EXPECT_GT(refused, 0);
  EXPECT_GT(hit_blocks, 0);
  EXPECT_GT(c.evictions(), 0);
  for (const auto& entry : tokens) c.free(entry.first);
  EXPECT_EQ(c.num_free_blocks(), c.num_blocks());
  c.check_invariants();
}

TEST(KvBlockCache, FuzzKeepsInvariants) { fuzz_keeps_invariants({}); }

TEST(KvBlockCache, FuzzKeepsInvariantsWithSlidingWindowLayers) {
  fuzz_keeps_invariants({.groups = 1, .window_blocks = 3, .full_groups = 1});
  fuzz_keeps_invariants({.groups = 6, .window_blocks = 2, .full_groups = 1});
  fuzz_keeps_invariants({.groups = 1, .window_blocks = 4, .full_groups = 2});
}

// gpt-oss: one full and one sliding group. Gemma 3: one full, six sliding groups.
TEST(KvBlockCache, SlidingWindowLayersHoldTheirLastWindowBesideTheChain) {
  const SlidingWindowBlocks oss{.groups = 1, .window_blocks = 9, .full_groups = 1};
  EXPECT_EQ(oss.blocks_for(4), 4);
  EXPECT_EQ(oss.blocks_for(100), 9);
  const SlidingWindowBlocks gemma{.groups = 6, .window_blocks = 65, .full_groups = 1};
  EXPECT_EQ(gemma.blocks_for(10), 60);
  EXPECT_EQ(gemma.blocks_for(1000), 390);
  EXPECT_EQ((SlidingWindowBlocks{.groups = 1, .window_blocks = 5, .full_groups = 2}).blocks_for(9),
            3);  // 5 pages of a group in units of 2

  // A 9-token window over blocks of 4: a query needs the 2 blocks before it.
  KvBlockCache c(40, 4, true, {.groups = 1, .window_blocks = 3, .full_groups = 1});
  const Hashes a = {11, 12, 13, 14, 15, 16, 17, 18};
  // A prefill of 32 tokens computes every position of its chunk in the sliding layers too.
  ASSERT_TRUE(c.allocate(1, a, 0, 32));
  EXPECT_EQ(c.blocks_held(1), 16);
  c.cache_full_blocks(1, a, 32);
  EXPECT_EQ(c.num_cached_blocks(), 8);
  EXPECT_EQ(c.num_cached_window_spans(), 8);
  // Its first decode step frees the 6 blocks no query sees again (tokens before 32 - 9 + 1)
  // and takes a block in each kind for token 33: 9 + 3 held. The freed ones stay cached.
  ASSERT_TRUE(c.allocate(1, a, 0, 33));
  EXPECT_EQ(c.blocks_held(1), 12);
  EXPECT_EQ(c.num_free_blocks(), 28);
  EXPECT_EQ(c.num_cached_window_spans(), 8);
  c.free(1);
  EXPECT_EQ(c.lookup(a, 33), 8);
  // The queue now holds the 22 untouched blocks, the six the window left (nearest it first),
  // the window's last three, then the chain. A new request of 16 blocks a kind takes 32 of
  // them: every sliding block of request 1 goes, and with them its hit, though no block of its
  // chain was evicted.
  Hashes other;
  for (BlockHash h = 100; h < 116; ++h) other.push_back(h);
  ASSERT_TRUE(c.allocate(2, other, 0, 64));
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.num_cached_window_spans(), 0);
  EXPECT_EQ(c.lookup(a, 33), 0);
  c.check_invariants();
}

// vLLM's hybrid coordinator: the full-attention hit is cut back to the last position before
// which the sliding layers hold a whole window.
TEST(KvBlockCache, ASlidingWindowHitEndsWhereItsWindowIsCached) {
  // A 13-token window over blocks of 4: a hit needs the 3 blocks before its end.
  KvBlockCache c(20, 4, true, {.groups = 1, .window_blocks = 4, .full_groups = 1});
  const Hashes shared = {1, 2, 3, 4, 5, 6};
  const Hashes longer = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  // Request 1 computes the shared six positions and keeps running.
  ASSERT_TRUE(c.allocate(1, shared, 0, 24));
  c.cache_full_blocks(1, shared, 24);
  // Request 2 hits them (and the window before its hit), computes four more, and ends.
  ASSERT_EQ(c.lookup(longer, 40), 6);
  ASSERT_TRUE(c.allocate(2, longer, 6, 40));
  EXPECT_EQ(c.blocks_held(2), 10 + 7);  // the window from position 3 on
  c.cache_full_blocks(2, longer, 40);
  c.free(2);
  EXPECT_EQ(c.lookup(longer, 44), 10);
  // Its sliding blocks went to the queue before its chain: a request of 2 + 2 blocks takes
  // exactly them. The chain of 10 is intact, but the window before position 10 is gone; the
  // last whole window left is request 1's, before position 6.
  ASSERT_TRUE(c.allocate(3, Hashes{50, 51}, 0, 8));
  EXPECT_EQ(c.evictions(), 0);
  EXPECT_EQ(c.num_cached_blocks(), 10);
  EXPECT_EQ(c.lookup(longer, 44), 6);
  c.check_invariants();
}

TEST(KvBlockCache, ASlidingWindowHitFromTheStartNeedsNoWholeWindow) {
  KvBlockCache c(20, 4, true, {.groups = 1, .window_blocks = 4, .full_groups = 1});
  ASSERT_TRUE(c.allocate(1, Hashes{21, 22}, 0, 8));
  c.cache_full_blocks(1, Hashes{21, 22}, 8);
  c.free(1);
  // Two cached positions, fewer than the window's three, but nothing comes before them.
  EXPECT_EQ(c.lookup(Hashes{21, 22, 23, 24, 25}, 20), 2);
}

// A prompt loaded whole (from a prefill pod, or host memory) counts as computed: its sliding
// layers need blocks for the window it ends with only, as vLLM skips the rest.
TEST(KvBlockCache, ALoadedPromptTakesSlidingBlocksForItsLastWindowOnly) {
  KvBlockCache c(40, 4, true, {.groups = 1, .window_blocks = 3, .full_groups = 1});
  Hashes h;
  for (BlockHash b = 1; b <= 10; ++b) h.push_back(b);
  // 40 tokens, 39 of them loaded: tokens before 39 - 9 + 1 = 31 are out of every window, so
  // positions 7 to 9 take sliding blocks.
  ASSERT_TRUE(c.can_allocate(1, h, 0, 40, 39));
  ASSERT_TRUE(c.allocate(1, h, 0, 40, 39));
  EXPECT_EQ(c.blocks_held(1), 10 + 3);
  c.cache_full_blocks(1, h, 39);
  EXPECT_EQ(c.num_cached_window_spans(), 2);  // positions 7 and 8 are full; 9 is not yet
  c.free(1);
  EXPECT_EQ(c.lookup(h, 40), 9);
  c.check_invariants();
}

TEST(KvBlockCache, SlidingGroupsLoseASpanWithAnyOfItsBlocks) {
  // Six sliding groups: a position costs six blocks beside its chain block.
  KvBlockCache c(16, 4, true, {.groups = 6, .window_blocks = 2, .full_groups = 1});
  ASSERT_TRUE(c.allocate(1, Hashes{31, 32}, 0, 8));
  EXPECT_EQ(c.blocks_held(1), 14);
  c.cache_full_blocks(1, Hashes{31, 32}, 8);
  EXPECT_EQ(c.num_cached_window_spans(), 2);
  c.free(1);
  // A request of one token takes 1 + 6 blocks: the two untouched and five of the first span
  // released, position 1's (the tail's). Position 0 keeps all six.
  ASSERT_TRUE(c.allocate(2, {}, 0, 1));
  EXPECT_EQ(c.num_cached_window_spans(), 1);
  EXPECT_EQ(c.lookup(Hashes{31, 32, 33}, 12), 1);
  c.check_invariants();
}

TEST(KvBlockCache, CountersStartAtZero) {
  PrefixCacheCounters counters;
  EXPECT_EQ(counters.queries, 0);
  EXPECT_EQ(counters.hits, 0);
  EXPECT_EQ(counters.requests, 0);
}

}  // namespace
}  // namespace fleetsim
