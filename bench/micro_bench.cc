// Micro benchmarks of the simulator's hot paths, with shapes taken from the flagship scenario
// (A100 pod, ~9.7k KV blocks of 16 tokens, multi-turn prompts of a few thousand tokens).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "models/block_hash.h"
#include "models/engine.h"
#include "models/kv_cache.h"
#include "models/request.h"
#include "sim/event_loop.h"

namespace fleetsim {
namespace {

constexpr std::int32_t kBlockSize = 16;
constexpr std::int32_t kPodBlocks = 9'700;  // ~155k tokens: one A100 80GB pod, Qwen3-32B-FP8

// A multi-turn chat prompt of `tokens` tokens: a 2,000-token system prompt, then turns of a
// 300-token question, a 30-token answer and 10 template tokens. Ids derive from `salt`, so
// distinct salts give prompts that share no block.
std::vector<Segment> chat_prompt(std::int32_t tokens, std::uint64_t salt) {
  std::vector<Segment> out;
  std::uint64_t id = salt * 1'000'003ULL + 1;
  std::int32_t left = tokens;
  auto add = [&](std::int32_t n) {
    const std::int32_t take = std::min(n, left);
    if (take > 0) out.push_back(Segment{id++, take});
    left -= take;
  };
  add(2'000);
  while (left > 0) {
    add(300);
    add(30);
    add(10);
  }
  return out;
}

// hash_blocks over an 8k-token prompt; items = blocks hashed.
void BM_HashBlocks8k(benchmark::State& state) {
  const std::vector<Segment> prompt = chat_prompt(8'192, 1);
  std::int64_t blocks = 0;
  for (auto _ : state) {
    std::vector<BlockHash> h = hash_blocks(prompt, kBlockSize);
    blocks += static_cast<std::int64_t>(h.size());
    benchmark::DoNotOptimize(h.data());
  }
  state.SetItemsProcessed(blocks);
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations()) * 8'192,
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HashBlocks8k);

// KvBlockCache::lookup of a prompt whose 500 leading blocks are cached (in the free queue, as a
// finished turn leaves them); items = blocks matched.
void BM_KvLookup500(benchmark::State& state) {
  KvBlockCache cache(kPodBlocks, kBlockSize, true);
  const std::int32_t tokens = 500 * kBlockSize + 1;
  const std::vector<BlockHash> hashes = hash_blocks(chat_prompt(tokens, 2), kBlockSize);
  cache.allocate(1, hashes, 0, tokens);
  cache.cache_full_blocks(1, hashes, tokens);
  cache.free(1);
  std::int64_t matched = 0;
  for (auto _ : state) {
    const std::int32_t n = cache.lookup(hashes, tokens);
    benchmark::DoNotOptimize(n);
    matched += n;
  }
  if (matched != 500 * static_cast<std::int64_t>(state.iterations())) {
    state.SkipWithError("lookup did not match 500 blocks");
  }
  state.SetItemsProcessed(matched);
}
BENCHMARK(BM_KvLookup500);

// One request's life in the cache: lookup, allocate, cache_full_blocks, free, for an 8k-token
// prompt (512 blocks). Arg 0 (cold): 64 distinct prompts in rotation overflow the pool, so every
// block misses and the allocator evicts. Arg 1 (warm): the same prompt every time, 511 blocks hit.
// items = blocks held per cycle.
void kv_alloc_cache_free(benchmark::State& state, SlidingWindowBlocks sliding) {
  const bool warm = state.range(0) == 1;
  const std::int32_t tokens = 8'192;
  const int variants = warm ? 1 : 64;
  std::vector<std::vector<BlockHash>> prompts;
  for (int v = 0; v < variants; ++v) {
    prompts.push_back(
        hash_blocks(chat_prompt(tokens, 100 + static_cast<std::uint64_t>(v)), kBlockSize));
  }
  KvBlockCache cache(kPodBlocks, kBlockSize, true, sliding);
  std::int64_t id = 0;
  std::int64_t blocks = 0;
  std::int64_t hits = 0;
  for (auto _ : state) {
    const std::vector<BlockHash>& h = prompts[static_cast<std::size_t>(id % variants)];
    const std::int32_t cached = cache.lookup(h, tokens);
    if (!cache.allocate(id, h, cached, tokens)) {
      state.SkipWithError("allocation failed");
      break;
    }
    cache.cache_full_blocks(id, h, tokens);
    cache.free(id);
    ++id;
    hits += cached;
    blocks += tokens / kBlockSize;
  }
  state.SetItemsProcessed(blocks);
  state.counters["hit_blocks"] =
      benchmark::Counter(static_cast<double>(hits), benchmark::Counter::kAvgIterations);
}
void BM_KvAllocCacheFree(benchmark::State& state) { kv_alloc_cache_free(state, {}); }
BENCHMARK(BM_KvAllocCacheFree)->Arg(0)->Arg(1)->ArgNames({"warm"});

// The same with gpt-oss's sliding-window layers (one sliding group, a 128-token window): the
// prefill takes a window block for every position, and a hit needs the 8 before its end.
void BM_KvAllocCacheFreeSliding(benchmark::State& state) {
  kv_alloc_cache_free(state,
                      {.groups = 1, .window_blocks = 9, .full_groups = 1, .window_tokens = 128});
}
BENCHMARK(BM_KvAllocCacheFreeSliding)->Arg(0)->Arg(1)->ArgNames({"warm"});

// Engine::plan_step + finish_step with a decode batch of 64 sequences (1,024-token prompts,
// 512 output tokens). Prefill runs untimed; each timed iteration is one decode step of 64
// sequences. When the first sequences finish (freeing their blocks), the rest are aborted and a
// new batch is prefilled, untimed, so every timed step decodes 64. items = tokens decoded.
void BM_EngineDecodeStep64(benchmark::State& state) {
  constexpr int kSeqs = 64;
  constexpr std::int32_t kPrompt = 1'024;
  constexpr std::int32_t kOutput = 512;
  EngineConfig config;  // A100 defaults: 2,048 tokens / 256 seqs per step
  Engine engine(config, kPodBlocks);
  std::int64_t next_id = 0;
  std::int64_t decoded = 0;
  auto refill = [&] {
    for (int i = 0; i < kSeqs; ++i) {
      auto r = std::make_shared<Request>();
      r->id = next_id++;
      r->prompt = chat_prompt(kPrompt, 10'000 + static_cast<std::uint64_t>(r->id));
      r->prompt_tokens = kPrompt;
      r->output_tokens = kOutput;
      r->output_content_id = 0xABCDEF00ULL + static_cast<std::uint64_t>(r->id);
      compute_block_hashes(*r, kBlockSize);
      engine.add(std::move(r), 0);
    }
    int started = 0;
    while (started < kSeqs) {  // prefill until every sequence has its first token
      const StepPlan plan = engine.plan_step();
      started += static_cast<int>(engine.finish_step(plan).first_tokens.size());
    }
  };
  refill();
  for (auto _ : state) {
    const StepPlan plan = engine.plan_step();
    decoded += plan.num_tokens;
    StepOutcome out = engine.finish_step(plan);
    benchmark::DoNotOptimize(out.finished.data());
    if (!out.finished.empty()) {
      state.PauseTiming();
      out = StepOutcome{};
      engine.abort_all();
      refill();
      state.ResumeTiming();
    }
  }
  state.SetItemsProcessed(decoded);
  state.counters["batch"] =
      benchmark::Counter(static_cast<double>(decoded), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_EngineDecodeStep64);

// EventLoop: schedule 1M events at pseudo-random times, then run them all. items = events.
void BM_EventLoopBulk1M(benchmark::State& state) {
  constexpr std::int64_t kEvents = 1'000'000;
  for (auto _ : state) {
    EventLoop loop;
    std::int64_t sum = 0;
    std::uint64_t x = 0x2545F4914F6CDD1DULL;
    for (std::int64_t i = 0; i < kEvents; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const auto at = static_cast<TimeNs>(x % (60 * kNsPerSec));
      loop.schedule_at(at, [&sum, i] { sum += i; });
    }
    loop.run();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kEvents);
}
BENCHMARK(BM_EventLoopBulk1M)->Unit(benchmark::kMillisecond);

// EventLoop in the simulator's regime: ~1,000 pending events, each scheduling its successor a
// few ms later, until 1M have run. items = events.
void BM_EventLoopSteady1M(benchmark::State& state) {
  constexpr std::int64_t kEvents = 1'000'000;
  constexpr int kPending = 1'000;
  for (auto _ : state) {
    EventLoop loop;
    std::int64_t scheduled = 0;
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    std::function<void()> tick = [&] {
      if (scheduled >= kEvents) return;
      ++scheduled;
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      loop.schedule_in(static_cast<TimeNs>(x % (5 * kNsPerMs)) + 1, tick);
    };
    for (int i = 0; i < kPending; ++i) {
      ++scheduled;
      loop.schedule_at(i, tick);
    }
    loop.run();
    benchmark::DoNotOptimize(loop.events_run());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kEvents);
}
BENCHMARK(BM_EventLoopSteady1M)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();
