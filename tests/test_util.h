// Helpers shared by the integration tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace fleetsim::testing {

// Writes `text` to `path`; returns the path, for tests that build input files.
inline std::string write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
  return path.string();
}

// A path in the temporary directory named `name` with this process's id before its extension:
// the test runs of two checkouts on one machine must not share files.
inline std::filesystem::path unique_temp_path(const std::string& name) {
  const std::filesystem::path n(name);
  return std::filesystem::temp_directory_path() /
         (n.stem().string() + "-" + std::to_string(::getpid()) + n.extension().string());
}

// A fixture with a fresh directory of its own per test (`prefix` + the test's name), removed
// after the test.
class TempDirTest : public ::testing::Test {
 protected:
  explicit TempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ =
        unique_temp_path(prefix_ + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

// Absolute path of a file in the source tree (tests run from the build tree).
inline std::string source_path(const std::string& rel) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/" + rel;
}

// A small fleet and workload that exercises queues, chunked prefill, prefix hits and, with few
// KV blocks, evictions and preemptions; fast enough to run once per policy.
inline std::string small_scenario_yaml(const std::string& policy, int kv_blocks = 0) {
  return std::string("name: small\nseed: 7\n") +
         "fleet:\n  pods: 3\n  gpu: L40S\n  model: Qwen2.5-7B-Instruct\n  server:\n"
         "    max_num_batched_tokens: 1024\n    num_gpu_blocks_override: " +
         std::to_string(kv_blocks) +
         "\n"
         "workload:\n  type: multi_turn_chat\n  conversations: 12\n  turns: 4\n  concurrency: 6\n"
         "  system_prompt_tokens: {dist: uniform, low: 300, high: 900}\n"
         "  question_tokens: {dist: uniform, low: 20, high: 200}\n"
         "  answer_tokens: {dist: uniform, low: 5, high: 60}\n"
         "arms:\n  - name: a\n    policy: " +
         policy + "\n";
}

// The same workload (with a tier hint per conversation) on a fleet of two pools, "small"
// (2 x L40S) and "big" (1 x H100), behind `replicas` gateway replicas.
inline std::string small_pooled_scenario_yaml(const std::string& policy, int kv_blocks = 0,
                                              int replicas = 1) {
  return std::string("name: small-pooled\nseed: 7\n") +
         "fleet:\n  server:\n    max_num_batched_tokens: 1024\n    num_gpu_blocks_override: " +
         std::to_string(kv_blocks) +
         "\n  pools:\n"
         "    - {name: small, pods: 2, gpu: L40S, model: Qwen2.5-7B-Instruct}\n"
         "    - {name: big, pods: 1, gpu: H100-SXM, model: Llama-3.1-8B}\n"
         "workload:\n  type: multi_turn_chat\n  conversations: 12\n  turns: 4\n  concurrency: 6\n"
         "  system_prompt_tokens: {dist: uniform, low: 300, high: 900}\n"
         "  question_tokens: {dist: uniform, low: 20, high: 200}\n"
         "  answer_tokens: {dist: uniform, low: 5, high: 60}\n"
         "  tier_mix: 'small:0.5, big:0.5'\n"
         "gateway:\n  replicas: " +
         std::to_string(replicas) + "\n  replica_assignment: round_robin\n" +
         "arms:\n  - name: a\n    policy: " + policy + "\n";
}

}  // namespace fleetsim::testing
