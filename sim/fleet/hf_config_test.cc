// hf_config: a model definition read from the config.json that ships with a checkpoint.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include "sim/errors.h"
#include "sim/fleet/model_defs.h"
#include "sim/yaml_checks.h"

namespace fleetsim {
namespace {

// The shapes of Qwen/Qwen3-32B-FP8's config.json on Hugging Face.
const char* kQwen3Fp8 = R"({
  "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "head_dim": 128,
  "hidden_size": 5120, "intermediate_size": 25600, "max_position_embeddings": 40960,
  "max_window_layers": 64, "num_attention_heads": 64, "num_hidden_layers": 64,
  "num_key_value_heads": 8, "sliding_window": null, "use_sliding_window": false,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "vocab_size": 151936,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}})";

// mistralai/Mixtral-8x7B-v0.1: experts as wide as intermediate_size, no moe_intermediate_size.
const char* kMixtral = R"({
  "model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "num_attention_heads": 32, "num_experts_per_tok": 2,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "sliding_window": null, "tie_word_embeddings": false, "vocab_size": 32000})";

class HfConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("fleetsim-hf-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `json` as config.json beside a scenario and parses `entry` (a flow map).
  std::vector<LlmSpec> defs(const std::string& json, const std::string& entry) {
    std::ofstream(dir_ / "config.json") << json;
    const std::string scenario = (dir_ / "s.yaml").string();
    return parse_model_defs(parse_yaml("[" + entry + "]", scenario),
                            YamlWhere{scenario, "fleet.models"});
  }
  std::string error_of(const std::string& json, const std::string& entry) {
    try {
      defs(json, entry);
    } catch (const ScenarioError& e) {
      return e.what();
    }
    return "(no error)";
  }
  std::filesystem::path dir_;
};

TEST_F(HfConfig, TheConfigOfACatalogModelGivesTheCatalogEntry) {
  const auto m = defs(kQwen3Fp8, "{name: mine, hf_config: config.json}");
  const LlmSpec& cat = find_model("Qwen3-32B-FP8");
  EXPECT_EQ(m[0].weight_dtype, WeightDtype::kFp8);  // from quantization_config
  EXPECT_DOUBLE_EQ(m[0].linear_params(), cat.linear_params());
  EXPECT_EQ(m[0].kv_bytes_per_token(2), cat.kv_bytes_per_token(2));
  EXPECT_NEAR(m[0].weight_bytes_total(), cat.weight_bytes_total(), 1e-3 * cat.weight_bytes_total());
  EXPECT_NE(m[0].source.find("config.json"), std::string::npos);
  // A field given beside hf_config overrides the file's.
  const auto bf16 = defs(kQwen3Fp8, "{name: mine, hf_config: config.json, weight_dtype: bf16}");
  EXPECT_EQ(bf16[0].weight_dtype, WeightDtype::kBf16);
}

TEST_F(HfConfig, MixtralsExpertsAreItsIntermediateSize) {
  const auto m = defs(kMixtral, "{name: mixtral, hf_config: config.json}");
  EXPECT_EQ(m[0].num_experts, 8);
  EXPECT_EQ(m[0].experts_per_token, 2);
  EXPECT_EQ(m[0].moe_intermediate_size, 14336);
  EXPECT_NEAR(m[0].params_b, 46.7, 0.05);              // the card's 46.7B
  EXPECT_NEAR(m[0].active_params() / 1e9, 12.6, 0.5);  // ~12.9B active, embeddings out
}

TEST_F(HfConfig, WhatThePodModelDoesNotModelIsRefusedByName) {
  struct Case {
    const char* json;
    const char* says;
  };
  const Case cases[] = {
      {R"({"hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
           "kv_lora_rank": 512, "vocab_size": 129280, "intermediate_size": 18432})",
       "multi-head latent attention (kv_lora_rank) is not modelled"},
      {R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
           "max_position_embeddings": 32768, "sliding_window": 4096})",
       "sliding-window attention (sliding_window 4096)"},
      {R"({"architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {"hidden_size": 5376, "num_hidden_layers": 2, "num_attention_heads": 32,
             "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
             "vocab_size": 262208, "layer_types": ["sliding_attention", "full_attention"]}})",
       "a layer of type \"sliding_attention\""},
      {R"({"hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16,
           "linear_num_key_heads": 16, "vocab_size": 151936, "intermediate_size": 5120})",
       "state-space or linear-attention layers (linear_num_key_heads)"},
      {R"({"hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
           "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
           "shared_expert_intermediate_size": 5632, "vocab_size": 151936})",
       "shared experts"},
      {R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "intermediate_size": 14336, "vocab_size": 32000,
           "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true}})",
       "quant_method 'bitsandbytes' is not modelled"},
      {R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "intermediate_size": 14336, "vocab_size": 32000,
           "quantization_config": {"quant_method": "compressed-tensors", "config_groups":
             {"group_0": {"weights": {"num_bits": 8, "type": "int"}}}}})",
       "(8-bit int weights, weight-only) is not modelled"},
      {R"({"hidden_size": 4096, "num_hidden_layers": 32,)", "not a JSON config.json"},
      {R"({"hidden_size": "wide", "num_hidden_layers": 32, "num_attention_heads": 32,
           "intermediate_size": 14336, "vocab_size": 32000, "quantization_config":
           {"quant_method": 8}})",
       "a field of an unexpected type"},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.json, "{name: x, hf_config: config.json}");
    EXPECT_NE(e.find("fleet.models.0.hf_config"), std::string::npos) << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
  }
  // An unknown quantization, once said, is taken.
  const auto bnb = defs(cases[5].json, "{name: x, hf_config: config.json, weight_dtype: int4}");
  EXPECT_EQ(bnb[0].weight_dtype, WeightDtype::kInt4);
  // 8-bit compressed-tensors and a window as long as the context are modelled.
  const auto w8 = defs(R"({"hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
      "num_key_value_heads": 4, "intermediate_size": 18944, "vocab_size": 152064,
      "max_position_embeddings": 32768, "sliding_window": 131072, "use_sliding_window": false,
      "quantization_config": {"quant_method": "compressed-tensors", "config_groups":
        {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}}})",
                       "{name: x, hf_config: config.json}");
  EXPECT_EQ(w8[0].weight_dtype, WeightDtype::kFp8);
}

TEST_F(HfConfig, FourBitCheckpointsAreInt4OrFp4) {
  const std::string llama = R"({"hidden_size": 4096, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
      "vocab_size": 128256, "quantization_config": )";
  struct Case {
    const char* quant;
    WeightDtype dtype;
  };
  const Case cases[] = {
      {R"({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": true})",
       WeightDtype::kInt4},
      {R"({"quant_method": "gptq", "bits": 4, "group_size": 128})", WeightDtype::kInt4},
      {R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})", WeightDtype::kFp4},
      {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
          {"num_bits": 4, "type": "float", "group_size": 16}, "input_activations":
          {"num_bits": 4, "type": "float"}}}})",
       WeightDtype::kFp4},
      {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
          {"num_bits": 4, "type": "int", "group_size": 128}}}})",
       WeightDtype::kInt4},
      {R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights":
          {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}}})",
       WeightDtype::kInt8},
  };
  for (const auto& c : cases) {
    const auto m = defs(llama + c.quant + "}", "{name: x, hf_config: config.json}");
    EXPECT_EQ(m[0].weight_dtype, c.dtype) << c.quant;
  }
  EXPECT_NE(error_of(llama + R"({"quant_method": "gptq", "bits": 8}})",
                     "{name: x, hf_config: config.json}")
                .find("8-bit gptq weights are not modelled"),
            std::string::npos);
}

TEST_F(HfConfig, AMissingFileOrShapeNamesTheFieldAndTheFile) {
  std::string e = error_of(kMixtral, "{name: x, hf_config: nowhere.json}");
  EXPECT_NE(e.find("fleet.models.0.hf_config: cannot open the Hugging Face config.json "
                   "'nowhere.json'"),
            std::string::npos)
      << e;
  e = error_of(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336,
                   "vocab_size": 32000})",
               "{name: x, hf_config: config.json}");
  EXPECT_NE(e.find("fleet.models.0.num_hidden_layers: missing field"), std::string::npos) << e;
  EXPECT_NE(e.find("fields not given here come from"), std::string::npos) << e;
}

}  // namespace
}  // namespace fleetsim
