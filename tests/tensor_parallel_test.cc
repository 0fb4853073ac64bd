// Tensor parallelism through a whole run: GPUs that cannot reach each other peer to peer carry
// every all-reduce through host memory (cost_model.allreduce_path: host), which slows every step,
// and the result says which path the run assumed. (An unknown path: tests/scenario_test.cc.)
#include <gtest/gtest.h>

#include <sstream>

#include "sim/fleet/report.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"
#include "tests/test_util.h"

namespace fleetsim {
namespace {

struct TpRun {
  nlohmann::json json;
  std::string table;
};

TpRun run_tp2(const std::string& path) {
  const Scenario s = parse_scenario(
      testing::small_scenario_yaml("round_robin"), "small.yaml",
      {"fleet.server.tensor_parallel_size=2", "fleet.cost_model.allreduce_path=" + path});
  const RunResult r = run_scenario(s, 1);
  std::ostringstream table;
  write_table(table, r, s);
  return {result_json(r, s), table.str()};
}

TEST(TensorParallel, WithoutPeerToPeerTheAllReducesGoThroughHostMemory) {
  const TpRun p2p = run_tp2("p2p");
  const TpRun host = run_tp2("host");
  const auto& a = p2p.json["arms"][0]["summary"];
  const auto& b = host.json["arms"][0]["summary"];
  // Every step pays the slower all-reduces: decoding and first tokens both take longer.
  EXPECT_GT(b["tpot_ms"]["mean"].get<double>(), 1.05 * a["tpot_ms"]["mean"].get<double>());
  EXPECT_GT(b["ttft_ms"]["mean"].get<double>(), a["ttft_ms"]["mean"].get<double>());
  EXPECT_EQ(b["completed"], a["completed"]);
  // The result names the path only where it is not the default.
  EXPECT_FALSE(p2p.json["fleet"].contains("allreduce_path"));
  EXPECT_EQ(host.json["fleet"]["allreduce_path"], "host");
  EXPECT_EQ(p2p.table.find("host memory"), std::string::npos);
  EXPECT_NE(host.table.find("all-reduce through host memory"), std::string::npos) << host.table;
}

}  // namespace
}  // namespace fleetsim
