#include "sim/fleet/hf_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim {

namespace {

using Json = nlohmann::json;

constexpr const char* kSayIt = "; set weight_dtype (fleetsim describe model) to say how it runs";

// A field the config has with a value of the wrong kind (hf_config_fields names the file).
struct WrongKind : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The field as an integer; absent or null: none. A whole float (4096.0) counts; anything else
// is refused rather than taken for absent.
std::optional<std::int64_t> integer(const Json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float()) {
    const double v = it->get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9e15) {
      return static_cast<std::int64_t>(v);
    }
  }
  throw WrongKind(std::string(key) + ": expected an integer, got " + it->dump());
}

// The first of `keys` the config has, as an integer.
std::optional<std::int64_t> first_integer(const Json& j, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    if (auto v = integer(j, k)) return v;
  }
  return std::nullopt;
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw ScenarioError(path_ + ": " + what);
  }

  // An architecture the pod model would get wrong: refused rather than approximated silently.
  [[noreturn]] void unmodelled(const std::string& what) const {
    fail(what +
         " is not modelled (fleetsim models full, sliding-window and latent attention, dense, "
         "routed and shared-expert MLPs); to accept an approximation, describe the model by its "
         "fields instead of hf_config (fleetsim describe model)");
  }

  void refuse_unmodelled(const Json& c) const {
    if (c.contains("attention_chunk_size") && !c["attention_chunk_size"].is_null()) {
      unmodelled("chunked local attention (attention_chunk_size)");
    }
    if (c.contains("index_topk") && !c["index_topk"].is_null()) {
      unmodelled("sparse attention over selected tokens (index_topk, DeepSeek-V3.2)");
    }
    if (const auto it = c.find("attn_type_list"); it != c.end() && it->is_array()) {
      for (const auto& t : *it) {
        if (t != 1) unmodelled("linear-attention layers (attn_type_list)");  // MiniMax: 0 = linear
      }
    }
    for (const auto& [key, value] : c.items()) {
      const bool hybrid = key.rfind("mamba", 0) == 0 || key.rfind("ssm_", 0) == 0 ||
                          key.rfind("linear_", 0) == 0 || key == "hybrid_override_pattern" ||
                          key == "layers_block_type" || key == "attn_layer_period";
      if (hybrid) unmodelled("state-space or linear-attention layers (" + key + ")");
    }
  }

  // Multi-head latent attention's widths (DeepSeek-V2/V3, Kimi K2).
  void latent_attention(const Json& c, YAML::Node& out) const {
    if (!c.contains("kv_lora_rank") || c["kv_lora_rank"].is_null()) return;
    for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}) {
      const auto v = integer(c, key);
      if (!v) fail(std::string("latent attention without an integer '") + key + "'");
      out[key] = *v;
    }
    if (auto q = integer(c, "q_lora_rank")) out["q_lora_rank"] = *q;  // null: direct
  }

  // vLLM's derived max_model_len (vllm/config/model.py, _get_and_verify_max_len): the position
  // limit, times a rope scaling's factor (of the original length for yarn) except for the
  // llama3, longrope and su types, whose limit already includes it.
  void context_length(const Json& c, YAML::Node& out) const {
    auto positions = integer(c, "max_position_embeddings");
    if (!positions || *positions <= 0) return;
    double length = static_cast<double>(*positions);
    if (const auto it = c.find("rope_scaling"); it != c.end() && it->is_object()) {
      const Json& rope = *it;
      const std::string type = rope.value("rope_type", rope.value("type", std::string()));
      const auto factor = rope.find("factor");
      const bool scales = type != "llama3" && type != "longrope" && type != "su" &&
                          type != "mrope" && factor != rope.end() && factor->is_number();
      if (scales) {
        if (type == "yarn") {
          if (auto original = integer(rope, "original_max_position_embeddings")) {
            length = static_cast<double>(*original);
          }
        }
        length *= factor->get<double>();
      }
    }
    out["max_position_embeddings"] = static_cast<std::int64_t>(std::llround(length));
  }

  // Sliding-window layers: counted from layer_types, a pattern, or Qwen's max_window_layers.
  void sliding_window(const Json& c, YAML::Node& out) const {
    const auto layers = integer(c, "num_hidden_layers").value_or(0);
    std::int64_t sliding = 0;
    if (const auto it = c.find("layer_types"); it != c.end() && it->is_array()) {
      for (const auto& t : *it) {
        if (t == "sliding_attention") {
          ++sliding;
        } else if (t != "full_attention") {
          unmodelled("a layer of type " + t.dump() + " (layer_types)");
        }
      }
      if (sliding == 0) return;
    }
    const auto window = integer(c, "sliding_window");
    const auto positions = integer(c, "max_position_embeddings");
    const bool used = !c.contains("use_sliding_window") || c["use_sliding_window"] == true;
    if (!window || *window <= 0 || !used) {
      if (sliding > 0) fail("sliding_attention layers without an integer sliding_window");
      return;
    }
    if (sliding == 0 && positions && *window >= *positions) return;  // as long as the context
    if (sliding == 0) {
      if (const auto pattern = integer(c, "sliding_window_pattern"); pattern && *pattern > 0) {
        sliding = layers - layers / *pattern;  // every pattern-th layer is global (Gemma 3)
      } else if (c.value("model_type", "") == "gemma2") {
        sliding = layers - layers / 2;  // Gemma 2 alternates, sliding first
      } else if (const auto from = integer(c, "max_window_layers"); from && *from < layers) {
        sliding = layers - std::max<std::int64_t>(0, *from);  // Qwen2: layers from there on
      } else {
        unmodelled("sliding-window attention on every layer (sliding_window " +
                   std::to_string(*window) + ")");
      }
    }
    out["sliding_window"] = *window;
    out["sliding_window_layers"] = sliding;
  }

  // Shared experts and dense MLP layers among the expert layers: only their counts and widths
  // matter to the pod model, not where they sit.
  void moe_layout(const Json& c, YAML::Node& out) const {
    const auto layers = integer(c, "num_hidden_layers").value_or(0);
    if (auto width = integer(c, "shared_expert_intermediate_size"); width && *width > 0) {
      out["shared_expert_intermediate_size"] = *width;  // Qwen2-MoE
    } else if (auto n = integer(c, "n_shared_experts"); n && *n > 0) {
      const auto each = integer(c, "moe_intermediate_size");
      if (!each) fail("n_shared_experts without an integer moe_intermediate_size");
      out["shared_expert_intermediate_size"] = *n * *each;  // DeepSeek
    }
    std::int64_t dense = integer(c, "first_k_dense_replace").value_or(0);
    if (const auto it = c.find("mlp_only_layers"); it != c.end() && it->is_array()) {
      dense += static_cast<std::int64_t>(it->size());
    }
    const auto step = first_integer(c, {"decoder_sparse_step", "moe_layer_freq"});
    if (step && *step > 1) dense = std::max(dense, layers - layers / *step);
    if (integer(c, "interleave_moe_layer_step").value_or(1) > 1) {
      unmodelled(
          "interleaved expert layers with their own dense width (interleave_moe_layer_step)");
    }
    if (dense > 0) out["dense_layers"] = std::min(dense, layers);
  }

  // Architectures whose attention norms each query and key head (vLLM's qwen3.py, qwen3_moe.py,
  // gemma3.py; olmo2.py norms the whole q and k projections, the same bytes), and configs that
  // say so (GLM-4.5's use_qk_norm).
  static bool normalizes_queries_and_keys(const Json& c, const Json& top) {
    if (c.value("use_qk_norm", false) == true) return true;
    static const std::set<std::string> kTypes = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text",
                                                 "olmo2"};
    for (const Json* j : {&c, &top}) {
      const auto it = j->find("model_type");
      if (it != j->end() && it->is_string() && kTypes.contains(it->get<std::string>())) return true;
    }
    return false;
  }

  // gpt-oss's MXFP4 checkpoints quantize the experts only: the attention is in
  // modules_to_not_convert (or a compressed-tensors ignore list).
  static bool attention_left_unquantized(const Json& top) {
    const auto q = top.find("quantization_config");
    if (q == top.end() || !q->is_object()) return false;
    for (const char* key : {"modules_to_not_convert", "ignore"}) {
      const auto it = q->find(key);
      if (it == q->end() || !it->is_array()) continue;
      for (const auto& m : *it) {
        if (m.is_string() && m.get<std::string>().find("self_attn") != std::string::npos) {
          return true;
        }
      }
    }
    return false;
  }

  // The weight_dtype quantization_config says (bf16 without one).
  std::string weight_dtype(const Json& top) const {
    const auto it = top.find("quantization_config");
    if (it == top.end() || !it->is_object()) return "bf16";
    const Json& q = *it;
    const std::string method = q.value("quant_method", "");
    const std::string algo = q.value("quant_algo", "");
    if (method == "fp8" || method == "fbgemm_fp8" || (method == "modelopt" && algo == "FP8")) {
      return "fp8";
    }
    if (method == "modelopt" && algo == "NVFP4") return "fp4";
    if (method == "mxfp4") return "mxfp4";
    if (method == "awq" || method == "gptq") {
      const int bits = q.contains("bits") ? q.value("bits", 0) : q.value("w_bit", 0);
      if (bits == 4) return "int4";
      fail("quantization_config: " + std::to_string(bits) + "-bit " + method +
           " weights are not modelled (4-bit are: weight_dtype int4)" + kSayIt);
    }
    if (method == "compressed-tensors" && q.contains("config_groups") &&
        q["config_groups"].is_object()) {
      return compressed_tensors_dtype(q["config_groups"]);
    }
    fail("quantization_config: quant_method '" + method +
         "' is not modelled (fp8, fbgemm_fp8, modelopt FP8 and NVFP4, mxfp4, 4-bit awq and "
         "gptq, compressed-tensors are)" +
         kSayIt);
  }

  // compressed-tensors: every group's weights (and activations) of one width and type.
  std::string compressed_tensors_dtype(const Json& groups) const {
    std::string dtype;
    for (const auto& [name, group] : groups.items()) {
      const Json w = group.value("weights", Json::object());
      const Json a = group.value("input_activations", Json());
      const int bits = w.value("num_bits", 0);
      const std::string type = w.value("type", "int");
      const bool w8a8 = a.is_object() && a.value("num_bits", 0) == 8;
      std::string d;
      if (bits == 16) d = "bf16";
      if (bits == 8 && type == "float") d = "fp8";
      if (bits == 8 && type == "int" && w8a8) d = "int8";
      if (bits == 4) d = type == "float" ? "fp4" : "int4";
      if (d.empty()) {
        fail("quantization_config: compressed-tensors group '" + name + "' (" +
             std::to_string(bits) + "-bit " + type + " weights" + (w8a8 ? "" : ", weight-only") +
             ") is not modelled" + kSayIt);
      }
      if (!dtype.empty() && d != dtype) fail("quantization_config: groups of different types");
      dtype = d;
    }
    if (dtype.empty()) fail("quantization_config: compressed-tensors without config_groups");
    return dtype;
  }

  YAML::Node read(bool weight_dtype_given) const {
    if (auto problem = input_file_problem(path_, max_input_bytes())) fail(*problem);
    std::ifstream in(path_);
    if (!in) fail("cannot read the file");
    Json top;
    try {
      top = Json::parse(in);
    } catch (const Json::parse_error& e) {
      fail(std::string("not a JSON config.json: ") + e.what());
    }
    if (!top.is_object()) fail("expected a JSON object (a Hugging Face config.json)");
    try {
      return fields(top, weight_dtype_given);
    } catch (const Json::exception& e) {
      fail(std::string("a field of an unexpected type: ") + e.what());
    }
  }

 private:
  YAML::Node fields(const Json& top, bool weight_dtype_given) const {
    const Json& c =
        top.contains("text_config") && top["text_config"].is_object() ? top["text_config"] : top;
    refuse_unmodelled(c);
    YAML::Node out(YAML::NodeType::Map);
    latent_attention(c, out);
    sliding_window(c, out);
    context_length(c, out);
    moe_layout(c, out);
    for (const char* key : {"num_hidden_layers", "hidden_size", "num_attention_heads",
                            "num_key_value_heads", "head_dim", "intermediate_size", "vocab_size",
                            "num_experts_per_tok", "moe_intermediate_size"}) {
      if (auto v = integer(c, key)) out[key] = *v;
    }
    if (auto e = first_integer(c, {"num_experts", "num_local_experts", "n_routed_experts"});
        e && *e > 0) {
      out["num_experts"] = *e;
      // Mixtral's experts are intermediate_size wide; it has no moe_intermediate_size.
      if (!out["moe_intermediate_size"] && out["intermediate_size"]) {
        out["moe_intermediate_size"] = out["intermediate_size"];
      }
    }
    const Json& tie = c.contains("tie_word_embeddings") ? c : top;
    if (tie.contains("tie_word_embeddings") && tie["tie_word_embeddings"].is_boolean()) {
      out["tie_word_embeddings"] = tie["tie_word_embeddings"].get<bool>();
    }
    if (normalizes_queries_and_keys(c, top)) out["qk_norm"] = true;
    if (!weight_dtype_given) out["weight_dtype"] = weight_dtype(top);
    if (out["num_experts"] && attention_left_unquantized(top)) out["quantized"] = "experts";
    return out;
  }

  std::string path_;
};

}  // namespace

YAML::Node hf_config_fields(const std::string& path, bool weight_dtype_given) {
  try {
    return Reader(path).read(weight_dtype_given);
  } catch (const WrongKind& e) {
    throw ScenarioError(path + ": " + e.what());
  }
}

}  // namespace fleetsim
