#include "models/trace_common.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "models/trace_test_util.h"

namespace fleetsim {
namespace {

// Requests at 0, 1, 2, ..., n-1 seconds, in conversation i % 2, each with its own content.
std::vector<Request> every_second(int n) {
  std::vector<Request> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    Request& r = v[static_cast<std::size_t>(i)];
    r.arrival = i * kNsPerSec;
    r.conversation = i % 2;
    r.session = "s" + std::to_string(i % 2);
    r.prompt = {{100 + static_cast<std::uint64_t>(i), 10}};
    r.prompt_tokens = 10;
    r.output_tokens = 1;
    r.output_content_id = 500 + static_cast<std::uint64_t>(i);
  }
  return v;
}

TEST(Replay, DefaultsKeepTheTrace) {
  const auto out = apply_replay(every_second(5), {});
  ASSERT_EQ(out.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)].arrival, i * kNsPerSec);
}

TEST(Replay, WindowThenTimeScaleThenCap) {
  ReplayOptions o;
  o.start_s = 2;
  o.end_s = 7;
  o.time_scale = 0.5;
  auto out = apply_replay(every_second(10), o);
  ASSERT_EQ(out.size(), 5u);  // 2, 3, 4, 5, 6
  EXPECT_EQ(out.front().prompt[0].content_id, 102u);
  EXPECT_EQ(out.front().arrival, 0);
  EXPECT_EQ(out.back().arrival, 2 * kNsPerSec);  // (6 - 2) x 0.5
  o.max_requests = 3;
  out = apply_replay(every_second(10), o);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out.back().prompt[0].content_id, 104u);
}

TEST(Replay, LoopsBackToBackWithFreshContent) {
  ReplayOptions o;
  o.loop = 3;
  const auto out = apply_replay(every_second(4), o);
  ASSERT_EQ(out.size(), 12u);
  // Copy k starts one mean gap (1 s) after copy k-1's last request (3 s): period 4 s.
  EXPECT_EQ(out[4].arrival, 4 * kNsPerSec);
  EXPECT_EQ(out[11].arrival, 11 * kNsPerSec);
  EXPECT_NE(out[4].prompt[0].content_id, out[0].prompt[0].content_id);
  EXPECT_NE(out[8].prompt[0].content_id, out[4].prompt[0].content_id);
  EXPECT_NE(out[4].output_content_id, out[0].output_content_id);
  EXPECT_EQ(out[4].conversation, 2);  // conversations 0, 1 become 2, 3, then 4, 5
  EXPECT_EQ(out[9].conversation, 5);
  EXPECT_EQ(out[5].session, "s1#1");

  o.loop_same_content = true;
  const auto same = apply_replay(every_second(4), o);
  EXPECT_EQ(same[4].prompt[0].content_id, same[0].prompt[0].content_id);
  EXPECT_EQ(same[4].conversation, 0);
  EXPECT_EQ(same[4].arrival, 4 * kNsPerSec);
}

TEST(Replay, EmptyWindowGivesNothing) {
  ReplayOptions o;
  o.start_s = 100;
  EXPECT_TRUE(apply_replay(every_second(4), o).empty());
}

TEST(DataPath, CurrentDirectoryThenDataDir) {
  // The file's name carries the test's (write_temp): use the one it wrote.
  const std::filesystem::path written = testing::write_temp("data-path-probe.txt", "x");
  const std::string dir = written.parent_path().string();
  const std::string name = written.filename().string();
  EXPECT_EQ(resolve_data_path(written.string()), written.string());
  ::setenv("FLEETSIM_DATA_DIR", dir.c_str(), 1);
  EXPECT_EQ(resolve_data_path(name), (std::filesystem::path(dir) / name).string());
  const std::string msg = testing::trace_error_of([] { resolve_data_path("no/such/trace.jsonl"); });
  EXPECT_EQ(msg.rfind("no/such/trace.jsonl: cannot open the trace file (looked in the current "
                      "directory ",
                      0),
            0u)
      << msg;
  EXPECT_NE(msg.find("and the data folder " + dir + ")"), std::string::npos) << msg;
  ::unsetenv("FLEETSIM_DATA_DIR");
}

}  // namespace
}  // namespace fleetsim
