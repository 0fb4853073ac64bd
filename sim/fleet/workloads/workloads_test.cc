// The workload generators and trace replays, driven by a stand-in fleet (workload_test_util.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "models/block_hash.h"
#include "models/trace_jsonl.h"
#include "models/trace_mooncake.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_test_util.h"

namespace fleetsim {
namespace {

using testing::WorkloadHarness;

bool is_prefix(const std::vector<Segment>& a, const std::vector<Segment>& b) {
  if (a.size() > b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].content_id != b[i].content_id || a[i].tokens != b[i].tokens) return false;
  }
  return true;
}

void expect_same(const Request& a, const Request& b) {
  EXPECT_EQ(a.arrival, b.arrival);
  EXPECT_EQ(a.conversation, b.conversation);
  EXPECT_EQ(a.turn, b.turn);
  EXPECT_EQ(a.session, b.session);
  EXPECT_TRUE(is_prefix(a.prompt, b.prompt) && a.prompt.size() == b.prompt.size());
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.output_tokens, b.output_tokens);
  EXPECT_EQ(a.output_content_id, b.output_content_id);
  EXPECT_EQ(a.tier, b.tier);
  EXPECT_EQ(a.slo_class, b.slo_class);
  EXPECT_EQ(a.measured, b.measured);
}

TEST(OpenLoop, StopsAtMaxRequestsOrDuration) {
  WorkloadHarness capped("open_loop", "{rate: 20, max_requests: 50}");
  EXPECT_EQ(capped.run().size(), 50u);
  // Evenly spaced at 2/s, stopping at 10 s: 0.5, 1.0, ..., 9.5.
  WorkloadHarness timed("open_loop",
                        "{arrival: constant, rate: 2, max_requests: 0, duration_s: 10}");
  const auto& sent = timed.run();
  ASSERT_EQ(sent.size(), 19u);
  EXPECT_EQ(sent.front().arrival, 500 * kNsPerMs);
  EXPECT_EQ(sent.back().arrival, 9500 * kNsPerMs);
}

// The up-front estimate behind the run-size check and --progress: a count, a rate over the
// duration or the horizon, and nothing where a horizon leaves a run-dependent share.
TEST(ExpectedRequests, CountsAndRatesAsTheRunWillSendThem) {
  const WorkloadHarness capped("open_loop", "{rate: 20, max_requests: 50}");
  EXPECT_EQ(capped.workload().expected_requests(0), 50.0);
  const WorkloadHarness timed("open_loop",
                              "{arrival: constant, rate: 2, max_requests: 0, duration_s: 10}");
  EXPECT_NEAR(timed.workload().expected_requests(0).value_or(-1), 20.0, 1e-9);
  EXPECT_NEAR(timed.workload().expected_requests(5).value_or(-1), 10.0, 1e-9);
  const WorkloadHarness chat("multi_turn_chat", "{conversations: 7, turns: 3}");
  EXPECT_EQ(chat.workload().expected_requests(0), 21.0);
  EXPECT_EQ(chat.workload().expected_requests(60), std::nullopt);
}

TEST(OpenLoop, LengthsTagsAndUniqueContent) {
  WorkloadHarness h("open_loop",
                    "{rate: 50, max_requests: 400, prompt_tokens: {dist: uniform, low: 100, high: "
                    "200}, output_tokens: 7, tier_mix: 'small:0.5, big:0.5', warmup_s: 2}");
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 400u);
  std::set<std::uint64_t> ids;
  std::set<std::string> tiers;
  for (const Request& r : sent) {
    EXPECT_GE(r.prompt_tokens, 100);
    EXPECT_LE(r.prompt_tokens, 200);
    EXPECT_EQ(r.prompt_tokens, total_tokens(r.prompt));
    EXPECT_EQ(r.output_tokens, 7);
    EXPECT_EQ(r.measured, r.arrival >= 2 * kNsPerSec);
    ids.insert(r.prompt.front().content_id);
    tiers.insert(r.tier);
  }
  EXPECT_EQ(ids.size(), 400u);
  EXPECT_EQ(tiers, (std::set<std::string>{"big", "small"}));
  // Same seed, same requests.
  WorkloadHarness again(
      "open_loop",
      "{rate: 50, max_requests: 400, prompt_tokens: {dist: uniform, low: 100, "
      "high: 200}, output_tokens: 7, tier_mix: 'small:0.5, big:0.5', warmup_s: 2}");
  const auto& sent2 = again.run();
  for (std::size_t i = 0; i < sent.size(); ++i) expect_same(sent[i], sent2[i]);
}

TEST(OpenLoop, GammaArrivalsAreBurstier) {
  WorkloadHarness h("open_loop", "{arrival: gamma, cv: 4, rate: 100, max_requests: 20000}");
  const auto& sent = h.run();
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 1; i < sent.size(); ++i) {
    const double g = ns_to_sec(sent[i].arrival - sent[i - 1].arrival);
    sum += g;
    sum_sq += g * g;
  }
  const double n = static_cast<double>(sent.size() - 1);
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.01, 0.001);
  EXPECT_NEAR(std::sqrt(sum_sq / n - mean * mean) / mean, 4.0, 0.4);
}

TEST(OpenLoop, RejectsAWorkloadThatNeverEnds) {
  EXPECT_THROW(WorkloadHarness("open_loop", "{max_requests: 0, duration_s: 0}"), ScenarioError);
  EXPECT_THROW(WorkloadHarness("open_loop", "{tier_mix: 'small'}"), ScenarioError);
  EXPECT_THROW(WorkloadHarness("open_loop", "{rate_schedule: '5:1, 2:1'}"), ScenarioError);
}

TEST(ConcurrencyStreams, BackToBackWithWarmupAndWindow) {
  // 4 streams, 1 s per request, 2 s warm-up, 5 s window: sends at 0, 1, ..., 6 s per stream.
  WorkloadHarness h("concurrency_streams", "{streams: 4, warmup_s: 2, duration_s: 5}", kNsPerSec);
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 28u);
  EXPECT_EQ(h.max_in_flight(), 4);
  int measured = 0;
  for (const Request& r : sent) {
    EXPECT_EQ(r.measured, r.arrival >= 2 * kNsPerSec && r.arrival < 7 * kNsPerSec);
    measured += r.measured ? 1 : 0;
    EXPECT_EQ(r.turn, 1);
  }
  EXPECT_EQ(measured, 20);
  EXPECT_EQ(sent.back().arrival, 6 * kNsPerSec);
}

TEST(ConcurrencyStreams, MultiTurnResendsTheHistory) {
  WorkloadHarness h("concurrency_streams",
                    "{streams: 2, turns: 3, duration_s: 0, max_requests: 12, "
                    "system_prompt_tokens: 500, question_tokens: 50, answer_tokens: 20}",
                    kNsPerSec);
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 12u);
  std::map<std::int64_t, std::vector<const Request*>> by_conv;
  for (const Request& r : sent) by_conv[r.conversation].push_back(&r);
  EXPECT_EQ(by_conv.size(), 4u);
  for (const auto& [conv, turns] : by_conv) {
    ASSERT_EQ(turns.size(), 3u);
    for (std::size_t t = 1; t < turns.size(); ++t) {
      EXPECT_EQ(turns[t]->turn, static_cast<std::int32_t>(t + 1));
      EXPECT_TRUE(is_prefix(turns[t - 1]->prompt, turns[t]->prompt));
      EXPECT_EQ(turns[t]->prompt_tokens, turns[t - 1]->prompt_tokens + 20 + 50);
    }
  }
}

TEST(SharedPrefix, GroupsShareTheirPrefix) {
  WorkloadHarness h("shared_prefix",
                    "{groups: 3, users_per_group: 5, rate: 100, max_requests: 3000, "
                    "prefix_tokens: {dist: uniform, low: 1000, high: 3000}, question_tokens: 30, "
                    "group_popularity: zipf, zipf_s: 1.0}");
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 3000u);
  std::map<std::uint64_t, int> count;
  std::map<std::uint64_t, std::int32_t> length;
  std::set<std::string> sessions;
  for (const Request& r : sent) {
    ASSERT_EQ(r.prompt.size(), 2u);
    ++count[r.prompt[0].content_id];
    auto [it, fresh] = length.emplace(r.prompt[0].content_id, r.prompt[0].tokens);
    EXPECT_EQ(it->second, r.prompt[0].tokens);
    EXPECT_EQ(r.prompt[1].tokens, 30);
    sessions.insert(r.session);
  }
  ASSERT_EQ(count.size(), 3u);
  EXPECT_EQ(sessions.size(), 15u);
  // Zipf(1) over 3 groups: weights 1, 1/2, 1/3 -> 6/11, 3/11, 2/11.
  std::vector<int> c;
  for (auto [id, n] : count) c.push_back(n);
  std::sort(c.rbegin(), c.rend());
  EXPECT_NEAR(c[0] / 3000.0, 6.0 / 11, 0.03);
  EXPECT_NEAR(c[2] / 3000.0, 2.0 / 11, 0.03);
}

TEST(PrefixBurst, EachBurstSharesAFreshPrefix) {
  WorkloadHarness h("prefix_burst",
                    "{rate: 1, burst_size: 8, burst_spread_ms: 50, max_requests: 40, "
                    "prefix_tokens: 2000, question_tokens: 100}");
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 40u);
  std::map<std::uint64_t, std::vector<TimeNs>> bursts;
  for (const Request& r : sent) bursts[r.prompt[0].content_id].push_back(r.arrival);
  ASSERT_EQ(bursts.size(), 5u);
  for (const auto& [id, arrivals] : bursts) {
    EXPECT_EQ(arrivals.size(), 8u);
    const auto [lo, hi] = std::minmax_element(arrivals.begin(), arrivals.end());
    EXPECT_LE(*hi - *lo, 50 * kNsPerMs);
  }
  WorkloadHarness pooled("prefix_burst",
                         "{rate: 1, burst_size: 4, max_requests: 80, prefix_pool: 2}");
  std::set<std::uint64_t> prefixes;
  for (const Request& r : pooled.run()) prefixes.insert(r.prompt[0].content_id);
  EXPECT_EQ(prefixes.size(), 2u);
}

TEST(AgentSessions, ContextGrowsByActionAndToolOutput) {
  WorkloadHarness h("agent_sessions",
                    "{sessions: 3, concurrency: 2, steps: 4, system_prompt_tokens: 1000, "
                    "task_tokens: 200, action_tokens: 50, tool_output_tokens: 300, "
                    "tool_latency_ms: 500}",
                    kNsPerSec);
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 12u);
  EXPECT_EQ(h.max_in_flight(), 2);
  std::map<std::int64_t, std::vector<const Request*>> by_session;
  std::set<std::uint64_t> system_prompts;
  for (const Request& r : sent) {
    by_session[r.conversation].push_back(&r);
    system_prompts.insert(r.prompt[0].content_id);
  }
  EXPECT_EQ(system_prompts.size(), 1u);  // one agent, one system prompt
  for (const auto& [id, steps] : by_session) {
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_EQ(steps[0]->prompt_tokens, 1200);
    for (std::size_t s = 1; s < steps.size(); ++s) {
      EXPECT_TRUE(is_prefix(steps[s - 1]->prompt, steps[s]->prompt));
      EXPECT_EQ(steps[s]->prompt_tokens, steps[s - 1]->prompt_tokens + 50 + 300);
      // Completion after 1 s, then the tool's 0.5 s.
      EXPECT_EQ(steps[s]->arrival - steps[s - 1]->arrival, 1500 * kNsPerMs);
      // The previous call's output is now part of the prompt, so its blocks can be hit.
      EXPECT_EQ(steps[s]->prompt[steps[s]->prompt.size() - 2].content_id,
                steps[s - 1]->output_content_id);
    }
  }
}

TEST(AgentSessions, StopsAtTheContextWindow) {
  WorkloadHarness h("agent_sessions",
                    "{sessions: 1, steps: 100, system_prompt_tokens: 1000, task_tokens: 0, "
                    "action_tokens: 100, tool_output_tokens: 900, max_context_tokens: 5000}",
                    kNsPerSec);
  const auto& sent = h.run();
  // Prompts 1000, 2000, 3000, 4000; then 5000 + 100 output tokens would not fit.
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent.back().prompt_tokens, 4000);
}

// A generated workload written with write_trace_jsonl and replayed with jsonl_trace sends the
// same requests at the same times.
void expect_round_trip(const std::string& type, const std::string& yaml, TimeNs service) {
  WorkloadHarness gen(type, yaml, service);
  const std::vector<Request> original = gen.run();
  ASSERT_FALSE(original.empty());
  const std::string path = ::testing::TempDir() + "/" + type + "-roundtrip.jsonl";
  write_trace_jsonl(path, original);
  WorkloadHarness replay("jsonl_trace", "{file: '" + path + "'}");
  const auto& again = replay.run();
  ASSERT_EQ(again.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    SCOPED_TRACE(type + " request " + std::to_string(i));
    expect_same(original[i], again[i]);
    compute_block_hashes(const_cast<Request&>(original[i]), 16);
    Request r = again[i];
    compute_block_hashes(r, 16);
    EXPECT_EQ(*original[i].block_hashes, *r.block_hashes);
  }
}

TEST(TraceRoundTrip, GeneratedWorkloadsReplayIdentically) {
  expect_round_trip("open_loop",
                    "{arrival: gamma, cv: 2, rate: 30, max_requests: 300, prompt_tokens: {dist: "
                    "lognormal, mean: 800, std: 300}, tier_mix: 'small:0.7, big:0.3', "
                    "slo_class_mix: 'interactive:1', warmup_s: 1}",
                    0);
  expect_round_trip("shared_prefix", "{groups: 4, rate: 30, max_requests: 200}", 0);
  expect_round_trip("concurrency_streams",
                    "{streams: 3, turns: 4, system_prompt_tokens: 300, warmup_s: 2, "
                    "duration_s: 10}",
                    700 * kNsPerMs);
  expect_round_trip("agent_sessions", "{sessions: 4, concurrency: 2, steps: 3}", kNsPerSec);
}

TEST(MooncakeReplay, TimeScaleCapAndLoop) {
  const std::string file =
      std::string(FLEETSIM_SHARED_DIR) + "/data/mooncake/synthetic_trace.jsonl";
  const Trace trace = read_mooncake_trace(file);
  WorkloadHarness h(
      "mooncake_trace",
      "{file: '" + file + "', time_scale: 0.5, max_requests: 100, slo_class_mix: 'a:1'}");
  const auto& sent = h.run();
  ASSERT_EQ(sent.size(), 100u);
  for (std::size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].arrival, trace.requests[i].arrival / 2);
    EXPECT_EQ(sent[i].prompt_tokens, trace.requests[i].prompt_tokens);
    EXPECT_EQ(sent[i].slo_class, "a");
  }
  WorkloadHarness looped("mooncake_trace", "{file: '" + file + "', end_s: 10, loop: 2}");
  const auto& twice = looped.run();
  std::size_t in_window = 0;
  while (trace.requests[in_window].arrival < 10 * kNsPerSec) ++in_window;
  EXPECT_EQ(twice.size(), 2 * in_window);
}

TEST(TraceWorkloads, SkipBadLinesAndEmptyWindows) {
  const std::string path = ::testing::TempDir() + "/bad-lines.jsonl";
  std::ofstream(path) << "{\"timestamp\": 0, \"input_length\": 6, \"output_length\": 1, "
                         "\"hash_ids\": [0]}\n{\"timestamp\": 1}\n{\"timestamp\": 2, "
                         "\"input_length\": 6, \"output_length\": 1, \"hash_ids\": [0]}\n";
  EXPECT_THROW(WorkloadHarness("mooncake_trace", "{file: '" + path + "'}"), TraceError);
  WorkloadHarness h("mooncake_trace", "{file: '" + path + "', skip_bad_lines: true}");
  EXPECT_EQ(h.run().size(), 2u);
  try {
    WorkloadHarness w("mooncake_trace", "{file: '" + path + "', skip_bad_lines: true, start_s: 5}");
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload.start_s/end_s: no request of " + path + " in the window [5 s, end)");
  }
}

TEST(TraceWorkloads, ReadingStopsAtTheWindowsEnd) {
  // Garbage after the window is never read; the whole file is.
  const std::string moon = ::testing::TempDir() + "/window.jsonl";
  std::ofstream(moon) << "{\"timestamp\": 0, \"input_length\": 6, \"output_length\": 1, "
                         "\"hash_ids\": [0]}\n{\"timestamp\": 1000, \"input_length\": 6, "
                         "\"output_length\": 1, \"hash_ids\": [0]}\n"
                         "{\"timestamp\": 2000, \"input_length\": 6, \"output_length\": 1, "
                         "\"hash_ids\": [0]}\nnot json\n";
  const std::string azure = ::testing::TempDir() + "/window.csv";
  std::ofstream(azure) << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                          "2024-05-10 00:00:00.5+00:00,10,1\n2024-05-10 00:00:01.5+00:00,10,1\n"
                          "2024-05-10 00:00:02.5+00:00,10,1\nnot,a,row\n";
  const std::string burst = ::testing::TempDir() + "/window-burstgpt.csv";
  std::ofstream(burst) << "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                          "0,ChatGPT,10,1,11,API log\n1,GPT-4,10,1,11,API log\n"
                          "2,ChatGPT,10,1,11,API log\nnot,a,row\n";
  for (const auto& [type, path] :
       {std::pair{"mooncake_trace", moon}, std::pair{"azure_trace", azure},
        std::pair{"burstgpt_trace", burst}}) {
    EXPECT_THROW(WorkloadHarness(type, "{file: '" + path + "'}"), TraceError) << type;
    WorkloadHarness windowed(type, "{file: '" + path + "', start_s: 1, end_s: 2}");
    const auto& sent = windowed.run();
    ASSERT_EQ(sent.size(), 1u) << type;
    EXPECT_EQ(sent[0].arrival, 0) << type;  // start_s is time 0
    WorkloadHarness capped(type, "{file: '" + path + "', max_requests: 2, loop: 3}");
    EXPECT_EQ(capped.run().size(), 2u) << type;
  }
}

TEST(TraceWorkloads, BurstGptFiltersByModelAndSaysWhenNothingMatches) {
  const std::string path = ::testing::TempDir() + "/models-burstgpt.csv";
  std::ofstream(path) << "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                         "0,ChatGPT,10,1,11,API log\n1,GPT-4,20,2,22,API log\n"
                         "2,GPT-4,30,0,30,API log\n3,ChatGPT,40,4,44,Conversation log\n";
  WorkloadHarness gpt4("burstgpt_trace", "{file: '" + path + "', model: GPT-4}");
  const auto& sent = gpt4.run();
  ASSERT_EQ(sent.size(), 1u);  // the failed GPT-4 row is left out
  EXPECT_EQ(sent[0].prompt_tokens, 20);
  try {
    WorkloadHarness none("burstgpt_trace", "{file: '" + path + "', log_type: 'Batch log'}");
    ADD_FAILURE() << "no error";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "workload.model/log_type: no row of " + path +
                  " with model '' and log type 'Batch log' (empty = any) in the window "
                  "start_s/end_s");
  }
}

TEST(TraceWorkloads, MissingFileIsATraceErrorNamingIt) {
  for (const char* type :
       {"mooncake_trace", "azure_trace", "jsonl_trace", "openai_chat_trace", "burstgpt_trace"}) {
    try {
      WorkloadHarness h(type, "{file: no/such/file.jsonl}");
      ADD_FAILURE() << type << ": no error";
    } catch (const TraceError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("no/such/file.jsonl: cannot open the trace file", 0),
                0u)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace fleetsim
