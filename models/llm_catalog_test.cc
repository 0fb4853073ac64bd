#include "models/llm_catalog.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/errors.h"

namespace fleetsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TEST(LlmCatalog, HasTheTwentyOneModels) {
  ASSERT_EQ(model_names().size(), 21u);
  for (const char* n : {"Qwen3-32B",
                        "Qwen3-32B-FP8",
                        "Qwen3-14B",
                        "Qwen3-8B",
                        "Qwen3-0.6B",
                        "Qwen2.5-72B-Instruct",
                        "Qwen2.5-72B-Instruct-FP8-dynamic",
                        "Qwen2.5-7B-Instruct",
                        "Llama-3.1-8B",
                        "Llama-3.1-8B-Instruct",
                        "Llama-3.1-70B",
                        "Llama-3.1-70B-Instruct",
                        "Llama-3.3-70B-Instruct",
                        "Llama-3.3-70B-Instruct-FP8-dynamic",
                        "Qwen3-30B-A3B",
                        "Qwen3-30B-A3B-FP8",
                        "Qwen3-235B-A22B-FP8",
                        "DeepSeek-V3",
                        "DeepSeek-R1",
                        "gpt-oss-20b",
                        "gpt-oss-120b"}) {
    EXPECT_EQ(find_model(n).name, n);
  }
}

TEST(LlmCatalog, AHuggingFaceRepositoryIdNamesItsEntry) {
  EXPECT_EQ(find_model("Qwen/Qwen3-32B-FP8").name, "Qwen3-32B-FP8");
  EXPECT_EQ(find_model("meta-llama/Llama-3.1-8B-Instruct").name, "Llama-3.1-8B-Instruct");
  LlmSpec mine = find_model("Qwen3-32B");
  mine.name = "my-model";
  EXPECT_EQ(find_model({mine}, "acme/my-model").name, "my-model");
  try {
    find_model("acme/Qwen3-33B");
    ADD_FAILURE() << "an unknown repository was accepted";
  } catch (const UnknownNameError& e) {
    EXPECT_NE(std::string(e.what()).find("'acme/Qwen3-33B'"), std::string::npos) << e.what();
  }
}

TEST(LlmCatalog, Qwen3KvBytesPerToken) {
  const LlmSpec& m = find_model("Qwen3-32B");
  EXPECT_EQ(m.layers, 64);
  EXPECT_EQ(m.num_kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  // 2 x 64 layers x 8 heads x 128 x 2 bytes.
  EXPECT_EQ(m.kv_bytes_per_token(2), 262'144);
  EXPECT_EQ(m.kv_bytes_per_token(1), 131'072);  // FP8 KV cache
  EXPECT_EQ(m.kv_bytes_per_token(2, 2), 131'072);
  EXPECT_EQ(m.kv_bytes_per_token(2, 8), 32'768);   // one KV head per GPU
  EXPECT_EQ(m.kv_bytes_per_token(2, 16), 32'768);  // replicated: still one per GPU
  EXPECT_EQ(find_model("Llama-3.1-8B").kv_bytes_per_token(2), 131'072);
  EXPECT_EQ(find_model("Qwen2.5-7B-Instruct").kv_bytes_per_token(2), 57'344);
  EXPECT_EQ(find_model("Llama-3.1-70B").kv_bytes_per_token(2), 327'680);
}

TEST(LlmCatalog, ParameterCountsMatchTheModelCards) {
  // Model cards: Qwen3-32B 32.8B total / 31.2B non-embedding; Qwen2.5-7B 7.61B / 6.53B;
  // Llama-3.1-8B 8.03B; Qwen3-14B 14.8B / 13.2B; Qwen3-8B 8.2B / 6.95B; Qwen3-0.6B 0.6B / 0.44B.
  EXPECT_NEAR(find_model("Qwen3-32B").active_params() / 1e9, 31.2, 0.05);
  EXPECT_NEAR(find_model("Qwen3-14B").active_params() / 1e9, 13.2, 0.05);
  EXPECT_NEAR(find_model("Qwen3-8B").active_params() / 1e9, 6.95, 0.01);
  EXPECT_NEAR(find_model("Qwen3-0.6B").active_params() / 1e9, 0.44, 0.005);
  EXPECT_NEAR(find_model("Qwen2.5-7B-Instruct").active_params() / 1e9, 6.53, 0.01);
  for (const auto& m : llm_catalog()) {
    // Linear layers + embedding + lm_head (untied) account for all but norms, biases and routers.
    const double accounted = m.linear_params() + (m.tied_embeddings ? 1 : 2) * m.embedding_params();
    EXPECT_NEAR(accounted / (m.params_b * 1e9), 1.0, 2e-3) << m.name;
    EXPECT_FALSE(m.source.empty()) << m.name;
  }
}

TEST(LlmCatalog, MixturesOfExpertsHoldEveryExpertAndMultiplyTheChosenOnes) {
  // Model cards: Qwen3-30B-A3B 30.5B total, 3.3B activated, 29.9B non-embedding; Qwen3-235B-A22B
  // 235B, 22B, 234B. "Activated" counts the embedding and lm_head.
  const LlmSpec& small = find_model("Qwen3-30B-A3B");
  EXPECT_TRUE(small.is_moe());
  EXPECT_FALSE(find_model("Qwen3-32B").is_moe());
  EXPECT_DOUBLE_EQ(small.expert_params(), 3.0 * 2048 * 768);
  EXPECT_NEAR(small.linear_params() / 1e9, 29.9, 0.05);
  EXPECT_NEAR((small.active_params() + 2 * small.embedding_params()) / 1e9, 3.3, 0.05);
  const LlmSpec& big = find_model("Qwen3-235B-A22B-FP8");
  EXPECT_NEAR(big.linear_params() / 1e9, 234.0, 0.5);
  EXPECT_NEAR((big.active_params() + 2 * big.embedding_params()) / 1e9, 22.0, 0.2);
  // Memory holds every expert: 29.9e9 FP8 bytes + 0.65e9 BF16 params x 2.
  EXPECT_NEAR(find_model("Qwen3-30B-A3B-FP8").weight_bytes_total() / 1e9, 31.13, 0.05);
  // Dense models: the two counts are one.
  EXPECT_DOUBLE_EQ(find_model("Llama-3.1-8B").linear_params(),
                   find_model("Llama-3.1-8B").active_params());
}

TEST(LlmCatalog, WeightBytesKeepEmbeddingsInBf16ForFp8) {
  const LlmSpec& bf16 = find_model("Qwen3-32B");
  const LlmSpec& fp8 = find_model("Qwen3-32B-FP8");
  EXPECT_NEAR(bf16.weight_bytes_total() / kGiB, 61.02, 0.01);
  // 31.21e9 FP8 linear bytes + 1.556e9 BF16 params (embed_tokens, lm_head, norms) x 2.
  EXPECT_NEAR(fp8.weight_bytes_total() / kGiB, 31.96, 0.01);
  EXPECT_GT(fp8.weight_bytes_total(), bf16.weight_bytes_total() / 2);
  // Llama-3.1-8B in BF16: 8.0303e9 parameters x 2 bytes.
  EXPECT_NEAR(find_model("Llama-3.1-8B").weight_bytes_total() / kGiB, 14.96, 0.01);
}

TEST(LlmCatalog, UnknownNameListsTheValidOnes) {
  try {
    find_model("Mistral-7B");
    FAIL() << "expected UnknownNameError";
  } catch (const UnknownNameError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Mistral-7B"), std::string::npos);
    EXPECT_NE(msg.find("Qwen3-32B-FP8"), std::string::npos);
  }
}

TEST(LlmCatalog, APipelineStageHoldsItsLayersAndOneVocabularyTable) {
  // Llama-3.1-70B: 80 layers, 70.6e9 parameters, two 128,256 x 8,192 tables.
  const LlmSpec& llm = find_model("Llama-3.1-70B");
  const LlmSpec two = pipeline_stage(llm, 2);
  EXPECT_EQ(two.layers, 40);
  EXPECT_TRUE(two.tied_embeddings);
  const double table = llm.embedding_params();
  EXPECT_NEAR(two.params_b * 1e9, (llm.params_b * 1e9 - 2 * table) / 2 + table, 1e3);
  // Each stage holds half the layers' weights and one table, so both together hold the model.
  EXPECT_NEAR(2 * two.weight_bytes_total(), llm.weight_bytes_total(), 1e3);
  EXPECT_EQ(2 * two.kv_bytes_per_token(2), llm.kv_bytes_per_token(2));
  // 80 layers over 3 stages: the busiest holds 27.
  EXPECT_EQ(pipeline_stage(llm, 3).layers, 27);
  EXPECT_EQ(pipeline_stage(llm, 1).params_b, llm.params_b);
  EXPECT_THROW(pipeline_stage(llm, 81), ScenarioError);
  // An MoE stage keeps its share of the dense layers (DeepSeek-V3: 3 of 61).
  const LlmSpec ds = pipeline_stage(find_model("DeepSeek-V3"), 2);
  EXPECT_EQ(ds.layers, 31);
  EXPECT_EQ(ds.dense_layers, 2);
  EXPECT_EQ(ds.num_experts, find_model("DeepSeek-V3").num_experts);
}

}  // namespace
}  // namespace fleetsim
