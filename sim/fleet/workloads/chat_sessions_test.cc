// Open-loop chat sessions against a stand-in fleet (workload_test_util.h): arrivals that do not
// wait for the fleet, closed-loop turns inside a session, and per-session draws.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "models/block_hash.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_test_util.h"

namespace fleetsim {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;
using testing::WorkloadHarness;

std::map<std::int64_t, std::vector<Request>> by_session(const std::vector<Request>& sent) {
  std::map<std::int64_t, std::vector<Request>> out;
  for (const Request& r : sent) out[r.conversation].push_back(r);
  return out;
}

TEST(ChatSessions, SessionsArriveOnTheirScheduleHoweverSlowTheFleet) {
  // Evenly spaced at 2 sessions/s; the fleet answers after 10 s, far slower than they arrive.
  WorkloadHarness h("chat_sessions", "{arrival: constant, rate: 2, max_sessions: 10, turns: 3}",
                    10 * kNsPerSec);
  const auto sessions = by_session(h.run());
  ASSERT_THAT(sessions, SizeIs(10));
  for (const auto& [id, turns] : sessions) {
    EXPECT_EQ(turns.front().arrival, (id + 1) * 500 * kNsPerMs) << id;
  }
  EXPECT_EQ(h.max_in_flight(), 10);  // every session in flight at once: nothing held them back
}

TEST(ChatSessions, ATurnFollowsTheAnswerAfterTheThinkTimeAndResendsTheHistory) {
  WorkloadHarness h("chat_sessions",
                    "{arrival: constant, rate: 1, max_sessions: 3, turns: 4, think_time_ms: 1500}",
                    200 * kNsPerMs);
  for (const auto& [id, turns] : by_session(h.run())) {
    ASSERT_THAT(turns, SizeIs(4));
    for (size_t t = 1; t < turns.size(); ++t) {
      EXPECT_EQ(turns[t].arrival - turns[t - 1].arrival, 1700 * kNsPerMs);
      EXPECT_EQ(turns[t].turn, static_cast<std::int32_t>(t + 1));
      // The previous prompt and its answer lead the next prompt.
      EXPECT_EQ(turns[t].prompt_tokens, turns[t - 1].prompt_tokens + turns[t - 1].output_tokens +
                                            turns[t].prompt.back().tokens);
    }
  }
}

TEST(ChatSessions, TurnsTenantAndClassAreDrawnPerSession) {
  WorkloadHarness h("chat_sessions",
                    "{rate: 5, max_sessions: 200, turns: {dist: uniform, low: 1, high: 6},"
                    " tenants: 'a:1, b:1', slo_class_mix: 'interactive:1, batch:1'}",
                    100 * kNsPerMs);
  std::set<size_t> lengths;
  std::set<std::string> tenants;
  for (const auto& [id, turns] : by_session(h.run())) {
    lengths.insert(turns.size());
    EXPECT_GE(turns.size(), 1u);
    EXPECT_LE(turns.size(), 6u);
    for (const Request& r : turns) {
      EXPECT_EQ(r.tenant, turns.front().tenant);
      EXPECT_EQ(r.slo_class, turns.front().slo_class);
      EXPECT_EQ(r.connection, id);
    }
    tenants.insert(turns.front().tenant + "/" + turns.front().slo_class);
  }
  EXPECT_GE(lengths.size(), 5u);
  EXPECT_EQ(tenants.size(), 4u);  // both tenants in both classes
}

TEST(ChatSessions, IsTheSameForTheSameSeedAndStopsAtItsDuration) {
  const std::string yaml = "{rate: 4, max_sessions: 0, duration_s: 20, turns: 2, warmup_s: 5}";
  WorkloadHarness a("chat_sessions", yaml, 300 * kNsPerMs);
  WorkloadHarness b("chat_sessions", yaml, 300 * kNsPerMs);
  const auto& sa = a.run();
  const auto& sb = b.run();
  ASSERT_EQ(sa.size(), sb.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].arrival, sb[i].arrival);
    EXPECT_EQ(hash_blocks(sa[i].prompt, 16), hash_blocks(sb[i].prompt, 16));
    EXPECT_EQ(sa[i].measured, sa[i].arrival >= 5 * kNsPerSec);
  }
  for (const auto& [id, turns] : by_session(sa)) EXPECT_LT(turns.front().arrival, 20 * kNsPerSec);
  EXPECT_NEAR(a.workload().expected_requests(0).value_or(-1), 4 * 20 * 2, 1e-9);
}

TEST(ChatSessions, RefusesAnEndlessStreamAndTurnsBelowOne) {
  const auto error_of = [](const std::string& yaml) {
    try {
      WorkloadHarness h("chat_sessions", yaml);
    } catch (const ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of("{max_sessions: 0}"), HasSubstr("needs max_sessions or duration_s"));
  EXPECT_THAT(error_of("{turns: 0}"), HasSubstr("workload.turns"));
}

}  // namespace
}  // namespace fleetsim
