#include "sim/fleet/model_defs.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "sim/errors.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

std::vector<LlmSpec> defs(const std::string& yaml) {
  return parse_model_defs(parse_yaml(yaml, "m.yaml"), YamlWhere{"m.yaml", "fleet.models"});
}

std::string error_of(const std::string& yaml) {
  try {
    defs(yaml);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// Llama-3.1-8B's config.json under another name.
const char* kLlama8b =
    "[{name: my-llama, num_hidden_layers: 32, hidden_size: 4096, num_attention_heads: 32, "
    "num_key_value_heads: 8, intermediate_size: 14336, vocab_size: 128256}]";

TEST(ModelDefs, AConfigJsonGivesTheCatalogsShapes) {
  const auto m = defs(kLlama8b);
  ASSERT_EQ(m.size(), 1u);
  const LlmSpec& cat = find_model("Llama-3.1-8B");
  EXPECT_EQ(m[0].head_dim, 128);  // 4096 / 32
  EXPECT_DOUBLE_EQ(m[0].linear_params(), cat.linear_params());
  EXPECT_EQ(m[0].kv_bytes_per_token(2), cat.kv_bytes_per_token(2));
  // Computed from the shapes: within norms and biases of the card's 8.03B.
  EXPECT_NEAR(m[0].params_b, cat.params_b, 0.001);
  EXPECT_EQ(&find_model(m, "my-llama"), &m[0]);
  EXPECT_EQ(find_model(m, "Llama-3.1-8B").name, "Llama-3.1-8B");
  // Without max_position_embeddings the length is not known: no limit.
  EXPECT_EQ(m[0].max_position_embeddings, 0);
  std::string with_length = kLlama8b;
  with_length.replace(with_length.find("vocab_size"), 0, "max_position_embeddings: 131072, ");
  EXPECT_EQ(defs(with_length.c_str())[0].max_position_embeddings, 131072);
}

TEST(ModelDefs, MixturesOfExpertsAndTiedEmbeddings) {
  // Qwen3-30B-A3B's shapes: the same parameter counts as the catalog entry.
  const auto m = defs(
      "[{name: moe, num_hidden_layers: 48, hidden_size: 2048, num_attention_heads: 32, "
      "num_key_value_heads: 4, head_dim: 128, vocab_size: 151936, num_experts: 128, "
      "num_experts_per_tok: 8, moe_intermediate_size: 768, weight_dtype: fp8}]");
  const LlmSpec& cat = find_model("Qwen3-30B-A3B-FP8");
  EXPECT_DOUBLE_EQ(m[0].active_params(), cat.active_params());
  EXPECT_DOUBLE_EQ(m[0].linear_params(), cat.linear_params());
  // Computed without the routers and norms (12.8M parameters) the card counts.
  EXPECT_NEAR(m[0].weight_bytes_total(), cat.weight_bytes_total(), 1e-3 * cat.weight_bytes_total());
  const auto tied = defs(
      "[{name: small, num_hidden_layers: 28, hidden_size: 1024, num_attention_heads: 16, "
      "num_key_value_heads: 8, head_dim: 128, intermediate_size: 3072, vocab_size: 151936, "
      "tie_word_embeddings: true}]");
  EXPECT_TRUE(tied[0].tied_embeddings);
  // One table, not two: Qwen3-0.6B's card says 0.6B (0.44B non-embedding).
  EXPECT_NEAR(tied[0].params_b, 0.596, 0.005);
}

TEST(ModelDefs, BadDefinitionsNameTheField) {
  EXPECT_NE(error_of("[{name: x, hidden_size: 8, num_attention_heads: 2, vocab_size: 9, "
                     "intermediate_size: 4}]")
                .find("fleet.models.0.num_hidden_layers: missing field"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: Llama-3.1-8B, num_hidden_layers: 1, hidden_size: 8, "
                     "num_attention_heads: 2, vocab_size: 9, intermediate_size: 4}]")
                .find("is a catalog model"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 3, "
                     "num_key_value_heads: 2, vocab_size: 9, intermediate_size: 4}]")
                .find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 2, "
                     "vocab_size: 9}]")
                .find("missing field 'intermediate_size'"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 2, "
                     "vocab_size: 9, num_experts: 4, num_experts_per_tok: 5, "
                     "moe_intermediate_size: 4}]")
                .find("num_experts_per_tok: expected an integer in [1, num_experts]"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 2, "
                     "vocab_size: 9, intermediate_size: 4, params_b: 0.000000001}]")
                .find("fleet.models.0.params_b"),
            std::string::npos);
  EXPECT_NE(error_of("[{name: x, layers: 2}]").find("unknown parameter"), std::string::npos);
  const std::string twice =
      "[{name: x, num_hidden_layers: 1, hidden_size: 8, num_attention_heads: 2, vocab_size: 9, "
      "intermediate_size: 4}, {name: x, num_hidden_layers: 1, hidden_size: 8, "
      "num_attention_heads: 2, vocab_size: 9, intermediate_size: 4}]";
  EXPECT_NE(error_of(twice).find("duplicate model name 'x'"), std::string::npos);
  EXPECT_NE(error_of("{name: x}").find("expected a non-empty list"), std::string::npos);
}

// The architecture fields: each inconsistent combination names its field and what it needs.
TEST(ModelDefs, ArchitectureFieldsThatDoNotFitTogetherNameTheField) {
  const std::string base =
      "[{name: x, num_hidden_layers: 4, hidden_size: 8, num_attention_heads: 2, vocab_size: 9, ";
  const struct {
    const char* fields;
    const char* says;
  } cases[] = {
      {"intermediate_size: 4, kv_lora_rank: 8, qk_nope_head_dim: 4, v_head_dim: 4}]",
       "fleet.models.0.qk_rope_head_dim: missing field 'qk_rope_head_dim'"},
      {"intermediate_size: 4, q_lora_rank: 8}]",
       "fleet.models.0.q_lora_rank: needs kv_lora_rank >= 1"},
      {"intermediate_size: 4, v_head_dim: 8}]", "fleet.models.0.v_head_dim: needs kv_lora_rank"},
      {"intermediate_size: 4, sliding_window: 16, sliding_window_layers: 4}]",
       "sliding_window_layers: expected an integer in [1, num_hidden_layers - 1]"},
      {"intermediate_size: 4, sliding_window_layers: 2}]",
       "sliding_window_layers: needs a sliding_window >= 1"},
      {"intermediate_size: 4, shared_expert_intermediate_size: 4}]",
       "shared_expert_intermediate_size: needs a mixture of experts"},
      {"intermediate_size: 4, quantized: experts}]",
       "quantized: 'experts' needs a mixture of experts"},
      {"intermediate_size: 4, num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 4, "
       "dense_layers: 4}]",
       "dense_layers: expected fewer than num_hidden_layers (4)"},
      {"num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 4, dense_layers: 1}]",
       "missing field 'intermediate_size': the width of the dense layers' MLP"},
      {"intermediate_size: 4, weight_dtype: mxfp8}]",
       "unknown value 'mxfp8'; valid values: bf16, fp8, int8, int4, fp4, mxfp4"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(base + c.fields);
    EXPECT_NE(e.find(c.says), std::string::npos) << c.fields << "\n" << e;
  }
  // And the consistent ones are taken.
  const LlmSpec m = defs(base +
                         "intermediate_size: 16, num_experts: 4, num_experts_per_tok: 2, "
                         "moe_intermediate_size: 4, dense_layers: 1, "
                         "shared_expert_intermediate_size: 4, sliding_window: 8, "
                         "sliding_window_layers: 2, weight_dtype: mxfp4, quantized: experts}]")[0];
  EXPECT_EQ(m.moe_layers(), 3);
  EXPECT_EQ(m.full_attention_layers(), 2);
  EXPECT_TRUE(m.quantized_experts_only);
}

}  // namespace
}  // namespace fleetsim
