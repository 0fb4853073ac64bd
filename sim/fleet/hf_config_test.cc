// hf_config: a model definition read from the config.json that ships with a checkpoint.
#include <gtest/gtest.h>
#include <unistd.h>
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
    // The process id too: two checkouts' test runs on one machine must not share a directory.
    dir_ = std::filesystem::temp_directory_path() /
           ("fleetsim-hf-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
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
  EXPECT_EQ(m[0].max_position_embeddings, cat.max_position_embeddings);
  EXPECT_EQ(m[0].max_position_embeddings, 40960);
  EXPECT_EQ(m[0].qk_norm, cat.qk_norm);  // model_type qwen3
  EXPECT_TRUE(m[0].qk_norm);
  // A field given beside hf_config overrides the file's.
  const auto bf16 = defs(kQwen3Fp8, "{name: mine, hf_config: config.json, weight_dtype: bf16}");
  EXPECT_EQ(bf16[0].weight_dtype, WeightDtype::kBf16);
}

TEST_F(HfConfig, MixtralsExpertsAreItsIntermediateSize) {
  const auto m = defs(kMixtral, "{name: mixtral, hf_config: config.json}");
  EXPECT_FALSE(m[0].qk_norm);
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
      {R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
           "max_position_embeddings": 32768, "sliding_window": 4096})",
       "sliding-window attention on every layer (sliding_window 4096)"},
      {R"({"architectures": ["Gemma3ForConditionalGeneration"],
           "text_config": {"hidden_size": 5376, "num_hidden_layers": 2, "num_attention_heads": 32,
             "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504,
             "vocab_size": 262208, "sliding_window": 1024,
             "layer_types": ["chunked_attention", "full_attention"]}})",
       "a layer of type \"chunked_attention\""},
      {R"({"hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 16,
           "linear_num_key_heads": 16, "vocab_size": 151936, "intermediate_size": 5120})",
       "state-space or linear-attention layers (linear_num_key_heads)"},
      {R"({"hidden_size": 6144, "num_hidden_layers": 2, "num_attention_heads": 64,
           "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9216,
           "vocab_size": 200064, "attn_type_list": [0, 1]})",
       "linear-attention layers (attn_type_list)"},
      {R"({"hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
           "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
           "v_head_dim": 128, "index_topk": 2048, "intermediate_size": 18432,
           "vocab_size": 129280})",
       "sparse attention over selected tokens (index_topk"},
      {R"({"hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40,
           "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192,
           "intermediate_size_mlp": 16384, "num_local_experts": 128, "num_experts_per_tok": 1,
           "interleave_moe_layer_step": 2, "vocab_size": 202048})",
       "interleaved expert layers"},
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
      {R"({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
           "intermediate_size": 14336, "vocab_size": 32000, "quantization_config":
           {"quant_method": 8}})",
       "a field of an unexpected type"},
      {R"({"hidden_size": "wide", "num_hidden_layers": 32, "num_attention_heads": 32,
           "intermediate_size": 14336, "vocab_size": 32000})",
       "config.json: hidden_size: expected an integer, got \"wide\""},
  };
  for (const auto& c : cases) {
    const std::string e = error_of(c.json, "{name: x, hf_config: config.json}");
    EXPECT_NE(e.find("fleet.models.0.hf_config"), std::string::npos) << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << e;
  }
  // An unknown quantization, once said, is taken.
  const auto bnb = defs(cases[6].json, "{name: x, hf_config: config.json, weight_dtype: int4}");
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

// The shapes of deepseek-ai/DeepSeek-V3's config.json (transformers' DeepseekV3Config defaults,
// which it documents as DeepSeek-V3's; quantization_config from DeepSeek's README_WEIGHTS).
const char* kDeepSeekV3 = R"({
  "model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61,
  "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536,
  "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "n_routed_experts": 256,
  "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
  "moe_layer_freq": 1, "vocab_size": 129280, "tie_word_embeddings": false,
  "max_position_embeddings": 163840, "num_nextn_predict_layers": 1,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}})";

// openai/gpt-oss-120b's config.json: sliding and full attention layers alternate; the experts
// alone are MXFP4.
std::string gpt_oss_120b() {
  std::string types;
  for (int i = 0; i < 36; ++i) {
    types +=
        std::string(i ? ", " : "") + (i % 2 == 0 ? "\"sliding_attention\"" : "\"full_attention\"");
  }
  return R"({"model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 36,
    "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64,
    "intermediate_size": 2880, "num_local_experts": 128, "num_experts_per_tok": 4,
    "experts_per_token": 4, "sliding_window": 128, "max_position_embeddings": 131072,
    "vocab_size": 201088, "tie_word_embeddings": false, "layer_types": [)" +
         types + R"(], "quantization_config": {"quant_method": "mxfp4",
    "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                               "model.embed_tokens", "lm_head"]}})";
}

// vLLM's derived max_model_len: rope scaling multiplies the position limit (yarn: its original
// length), except for llama3-style scaling, whose limit already includes it.
TEST_F(HfConfig, TheContextLengthIsVllmsDerivedMaxModelLen) {
  auto with_rope = [](const std::string& rope) {
    return R"({"hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
      "intermediate_size": 4096, "vocab_size": 1000, "max_position_embeddings": 32768)" +
           (rope.empty() ? std::string() : ", \"rope_scaling\": " + rope) + "}";
  };
  auto length = [&](const std::string& rope) {
    return defs(with_rope(rope), "{name: m, hf_config: config.json}")[0].max_position_embeddings;
  };
  EXPECT_EQ(length(""), 32768);
  EXPECT_EQ(length(R"({"rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 32768})"),
            131072);
  EXPECT_EQ(length(R"({"type": "linear", "factor": 2.0})"), 65536);
  EXPECT_EQ(length(R"({"rope_type": "llama3", "factor": 8.0,
                       "original_max_position_embeddings": 8192})"),
            32768);
  // DeepSeek-V3 and gpt-oss-120b: yarn from 4,096 by 40 and by 32, their limits as written.
  EXPECT_EQ(defs(kDeepSeekV3, "{name: ds, hf_config: config.json}")[0].max_position_embeddings,
            163840);
  EXPECT_EQ(find_model("gpt-oss-120b").max_position_embeddings, 131072);
}

TEST_F(HfConfig, LatentAttentionSharedExpertsAndDenseLayersOfDeepSeekV3) {
  const LlmSpec m = defs(kDeepSeekV3, "{name: ds, hf_config: config.json}")[0];
  EXPECT_TRUE(m.is_mla());
  EXPECT_EQ(m.q_lora_rank, 1536);
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.moe_layers(), 58);
  EXPECT_EQ(m.shared_expert_intermediate_size, 2048);
  EXPECT_EQ(m.weight_dtype, WeightDtype::kFp8);
  // The card: 671B parameters (the MTP module's 14B besides), 37B activated a token.
  EXPECT_NEAR(m.params_b, 671.0, 1.0);
  EXPECT_NEAR((m.active_params() + m.embedding_params()) / 1e9, 37.0, 1.0);
  // One 576-wide latent a layer, whole on every tensor-parallel rank.
  EXPECT_EQ(m.kv_bytes_per_token(2, 1), 61 * 576 * 2);
  EXPECT_EQ(m.kv_bytes_per_token(2, 8), 61 * 576 * 2);
}

TEST_F(HfConfig, SlidingLayersAndExpertOnlyMxfp4OfGptOss) {
  const LlmSpec m = defs(gpt_oss_120b(), "{name: oss, hf_config: config.json}")[0];
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_EQ(m.sliding_layers, 18);
  EXPECT_EQ(m.full_attention_layers(), 18);
  EXPECT_EQ(m.weight_dtype, WeightDtype::kMxfp4);
  EXPECT_TRUE(m.quantized_experts_only);
  // arXiv 2508.10925, table 1: 116.83B parameters, 5.13B active (lm_head in, embeddings out);
  // a 60.8 GiB checkpoint.
  EXPECT_NEAR(m.params_b, 116.83, 0.2);
  EXPECT_NEAR((m.active_params() + m.embedding_params()) / 1e9, 5.13, 0.1);
  EXPECT_NEAR(m.weight_bytes_total() / (1024.0 * 1024 * 1024), 60.8, 1.5);
}

TEST_F(HfConfig, GemmaThreesPatternAndQwenMoesSharedExpert) {
  const LlmSpec gemma = defs(R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "text_config": {"model_type": "gemma3_text", "hidden_size": 5376, "num_hidden_layers": 62,
        "num_attention_heads": 32, "num_key_value_heads": 16, "head_dim": 128,
        "intermediate_size": 21504, "vocab_size": 262208, "sliding_window": 1024,
        "sliding_window_pattern": 6, "max_position_embeddings": 131072}})",
                             "{name: g, hf_config: config.json}")[0];
  EXPECT_EQ(gemma.sliding_layers, 52);  // vLLM's hybrid KV design doc: 52 sliding, 10 full
  EXPECT_TRUE(gemma.qk_norm);           // gemma3_text, under text_config
  // Qwen/Qwen1.5-MoE-A2.7B: 60 experts of 1408, 4 a token, a shared expert of 5632; card: 14.3B.
  const LlmSpec qwen = defs(R"({"hidden_size": 2048, "num_hidden_layers": 24,
      "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
      "num_experts": 60, "num_experts_per_tok": 4, "moe_intermediate_size": 1408,
      "shared_expert_intermediate_size": 5632, "decoder_sparse_step": 1, "mlp_only_layers": [],
      "vocab_size": 151936, "tie_word_embeddings": false})",
                            "{name: q, hf_config: config.json}")[0];
  EXPECT_EQ(qwen.dense_layers, 0);
  EXPECT_FALSE(qwen.qk_norm);  // Qwen2-MoE's attention has no query or key norm
  EXPECT_NEAR(qwen.params_b, 14.3, 0.1);
}

TEST_F(HfConfig, AConfigThatNormsQueriesAndKeysSaysSo) {
  // GLM-4.5's config.json states it ("use_qk_norm": true); a field beside hf_config wins.
  const std::string glm = std::string("{\"use_qk_norm\": true, ") + (kMixtral + 1);
  EXPECT_TRUE(defs(glm, "{name: g, hf_config: config.json}")[0].qk_norm);
  EXPECT_FALSE(defs(glm, "{name: g, hf_config: config.json, qk_norm: false}")[0].qk_norm);
  EXPECT_TRUE(defs(kMixtral, "{name: m, hf_config: config.json, qk_norm: true}")[0].qk_norm);
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
  // The file's fields have no line of the scenario: the error names the file and the line of the
  // hf_config that points to it.
  EXPECT_NE(e.find("config.json (" + (dir_ / "s.yaml").string() + ":1: hf_config): fleet.models"),
            std::string::npos)
      << e;
}

TEST_F(HfConfig, AFieldOfTheWrongKindIsNamedNotTakenForMissing) {
  const std::string e = error_of(R"({"num_hidden_layers": 32, "hidden_size": "big"})",
                                 "{name: x, hf_config: config.json}");
  EXPECT_NE(e.find("config.json: hidden_size: expected an integer, got \"big\""), std::string::npos)
      << e;
  // A whole float is an integer; a field given in the scenario keeps its own line.
  const std::string layers =
      error_of(R"({"num_hidden_layers": 32.0, "hidden_size": 4096.0, "num_attention_heads": 32,
                   "intermediate_size": 14336, "vocab_size": 32000})",
               "{name: x, hf_config: config.json, num_attention_heads: 0}");
  EXPECT_NE(layers.find("s.yaml:1: fleet.models.0.num_attention_heads"), std::string::npos)
      << layers;
}

}  // namespace
}  // namespace fleetsim
