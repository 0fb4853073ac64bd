// multi_turn_chat's clients: one conversation each run to its end, or several alternated the way
// vLLM's benchmarks/multi_turn client does.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "sim/errors.h"
#include "sim/fleet/workloads/workload_test_util.h"

namespace fleetsim {
namespace {

using testing::WorkloadHarness;
using Turn = std::pair<std::int64_t, std::int32_t>;  // (conversation, turn)

std::vector<Turn> turns_sent(const std::vector<Request>& sent) {
  std::vector<Turn> out;
  for (const Request& r : sent) out.emplace_back(r.conversation, r.turn);
  return out;
}

const std::string kShape =
    "system_prompt_tokens: 100, question_tokens: 10, answer_tokens: 5, "
    "template_tokens_per_turn: 0";

TEST(MultiTurnChat, EachClientRunsOneConversationToItsEnd) {
  WorkloadHarness h("multi_turn_chat",
                    "{conversations: 3, turns: 2, concurrency: 2, " + kShape + "}", ms_to_ns(1000));
  const auto sent = turns_sent(h.run());
  const std::vector<Turn> expected = {{0, 1}, {1, 1}, {0, 2}, {1, 2}, {2, 1}, {2, 2}};
  EXPECT_EQ(sent, expected);
  EXPECT_EQ(h.max_in_flight(), 2);
}

TEST(MultiTurnChat, AClientAlternatesItsConversationsAsVllmsClientDoes) {
  // benchmark_serving_multi_turn.py sends the conversation at the right of its deque (the newest)
  // and puts a continuing one back at the left; a finished one makes room for the next.
  WorkloadHarness h(
      "multi_turn_chat",
      "{conversations: 3, turns: 2, concurrency: 1, active_per_client: 2, " + kShape + "}",
      ms_to_ns(1000));
  const auto& sent = h.run();
  const std::vector<Turn> expected = {{1, 1}, {0, 1}, {1, 2}, {2, 1}, {0, 2}, {2, 2}};
  EXPECT_EQ(turns_sent(sent), expected);
  EXPECT_EQ(h.max_in_flight(), 1);
  // Every turn resends its own conversation's history, whichever came between.
  std::map<std::int64_t, std::int64_t> last_prompt;
  for (const Request& r : sent) {
    if (r.turn > 1) {
      EXPECT_EQ(r.prompt_tokens, last_prompt[r.conversation] + 5 + 10);
    }
    last_prompt[r.conversation] = r.prompt_tokens;
  }
}

TEST(MultiTurnChat, RandomSamplingSendsEveryTurnInOrderAndIsSeeded) {
  const std::string yaml =
      "{conversations: 12, turns: 4, concurrency: 3, active_per_client: 3, "
      "conversation_sampling: random, " +
      kShape + "}";
  WorkloadHarness a("multi_turn_chat", yaml, ms_to_ns(1000), 7);
  WorkloadHarness b("multi_turn_chat", yaml, ms_to_ns(1000), 7);
  WorkloadHarness c("multi_turn_chat", yaml, ms_to_ns(1000), 8);
  const auto order = turns_sent(a.run());
  EXPECT_EQ(order, turns_sent(b.run()));
  EXPECT_NE(order, turns_sent(c.run()));
  ASSERT_EQ(order.size(), 48u);
  std::map<std::int64_t, std::int32_t> next_turn;
  for (const auto& [conversation, turn] : order) {
    EXPECT_EQ(turn, ++next_turn[conversation]);
  }
  EXPECT_EQ(next_turn.size(), 12u);
  EXPECT_EQ(a.max_in_flight(), 3);
  WorkloadHarness round_robin(
      "multi_turn_chat",
      "{conversations: 12, turns: 4, concurrency: 3, active_per_client: 3, " + kShape + "}",
      ms_to_ns(1000), 7);
  EXPECT_NE(order, turns_sent(round_robin.run()));
}

TEST(MultiTurnChat, RejectsAnUnknownSamplingNamingTheChoices) {
  try {
    testing::workload_params("multi_turn_chat", "{conversation_sampling: lru}");
    FAIL() << "accepted an unknown sampling";
  } catch (const ScenarioError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("conversation_sampling"), std::string::npos) << msg;
    EXPECT_NE(msg.find("round_robin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("random"), std::string::npos) << msg;
  }
  EXPECT_THROW(testing::workload_params("multi_turn_chat", "{active_per_client: 0}"),
               ScenarioError);
}

}  // namespace
}  // namespace fleetsim
