#include "sim/fleet/model_defs.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "sim/errors.h"
#include "sim/fleet/definitions.h"
#include "sim/fleet/hf_config.h"
#include "sim/input_files.h"
#include "sim/yaml_checks.h"

namespace fleetsim {

const ParamSpec& model_def_spec() {
  static const ParamSpec kSpec =
      ParamSpec()
          .text("name", "", "the name fleet.model and pools use (not a catalog name)")
          .text("hf_config", "",
                "a Hugging Face config.json (beside the scenario, else from the current "
                "directory) giving the fields below; fields given here override it")
          .integer("num_hidden_layers", 0, "decoder layers", 0, 1000)
          .integer("hidden_size", 0, "hidden size", 0, 1e6)
          .integer("num_attention_heads", 0, "query heads", 0, 10000)
          .integer("num_key_value_heads", 0, "KV heads (GQA); 0 = num_attention_heads", 0, 10000)
          .integer("head_dim", 0, "head dimension; 0 = hidden_size / num_attention_heads", 0, 10000)
          .integer("intermediate_size", 0, "MLP intermediate size (dense models)", 0, 1e7)
          .integer("vocab_size", 0, "vocabulary size", 0, 1e8)
          .integer("num_experts", 0, "experts per layer of a mixture of experts; 0 = dense", 0,
                   100000)
          .integer("num_experts_per_tok", 0, "experts the router picks for each token", 0, 100000)
          .integer("moe_intermediate_size", 0, "intermediate size of each expert", 0, 1e7)
          .integer("shared_expert_intermediate_size", 0,
                   "width of the shared expert every token of an expert layer also passes through "
                   "(DeepSeek: n_shared_experts x moe_intermediate_size); 0 = none",
                   0, 1e7)
          .integer("dense_layers", 0,
                   "layers of a mixture of experts whose MLP is dense, intermediate_size wide "
                   "(DeepSeek's first_k_dense_replace, Qwen's mlp_only_layers)",
                   0, 1000)
          .integer("kv_lora_rank", 0,
                   "multi-head latent attention: rank of the compressed KV latent a token caches "
                   "(DeepSeek-V3: 512); 0 = grouped KV heads",
                   0, 100000)
          .integer("q_lora_rank", 0, "MLA: rank of the query bottleneck; 0 = direct projection", 0,
                   100000)
          .integer("qk_nope_head_dim", 0, "MLA: per-head key width without rotary part", 0, 10000)
          .integer("qk_rope_head_dim", 0, "MLA: rotary key width, cached beside the latent", 0,
                   10000)
          .integer("v_head_dim", 0, "MLA: per-head value width", 0, 10000)
          .integer("sliding_window", 0,
                   "tokens a query of a sliding-window layer sees; 0 = full attention everywhere",
                   0, 1e8)
          .integer("sliding_window_layers", 0,
                   "layers with the sliding window (gpt-oss: half; Gemma 3: five in six); the "
                   "others attend to everything",
                   0, 1000)
          .integer("max_position_embeddings", 0,
                   "the longest sequence the model takes (config.json, rope scaling applied): "
                   "vLLM's default max_model_len; 0 = not known, no limit",
                   0, 1e8)
          .boolean("tie_word_embeddings", false, "lm_head is the embedding table")
          .boolean("qk_norm", false,
                   "a per-head RMSNorm of the queries and keys before the rotary embedding (Qwen3, "
                   "Gemma 3, OLMo 2; config.json's use_qk_norm): one more element-wise pass over "
                   "them each step")
          .text("weight_dtype", "bf16",
                "how the checkpoint stores its linear layers (embeddings, lm_head and norms stay "
                "BF16): bf16 (or FP16), fp8 (W8A8 on FP8 tensor cores, else Marlin W8A16), int8 "
                "(W8A8), int4 (AWQ/GPTQ W4A16, group 128), fp4 (NVFP4; W4A16 before Blackwell), "
                "mxfp4 (OCP MXFP4, scale per 32; W4A16 on every GPU, as vLLM runs it by default)",
                weight_dtype_names())
          .text("quantized", "linear",
                "which weights weight_dtype covers: 'linear' (every linear layer of the "
                "decoder) or 'experts' (the routed experts only; attention, shared experts and "
                "dense layers stay BF16, as in gpt-oss's MXFP4 checkpoints)",
                {"linear", "experts"})
          .real("params_b", 0,
                "total parameters in billions, as the model card gives them; 0 = computed from "
                "the shapes (linear layers, embeddings and lm_head)",
                0, 1e5)
          .text("source", "", "where the figures come from (the config.json), for the record");
  return kSpec;
}

namespace {

std::int32_t get32(const Params& p, const char* name) {
  return static_cast<std::int32_t>(p.get_int(name));
}

// MLA's widths: all of them, or none.
void parse_latent_attention(const Params& p, const YAML::Node& n, const YamlWhere& w, LlmSpec& m) {
  m.kv_lora_rank = get32(p, "kv_lora_rank");
  m.q_lora_rank = get32(p, "q_lora_rank");
  m.qk_nope_head_dim = get32(p, "qk_nope_head_dim");
  m.qk_rope_head_dim = get32(p, "qk_rope_head_dim");
  m.v_head_dim = get32(p, "v_head_dim");
  const char* widths[] = {"qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
  for (const char* f : widths) {
    const bool ok = m.is_mla() ? p.get_int(f) > 0 : p.get_int(f) == 0;
    if (!ok) {
      throw ScenarioError(w.child(f).at(n) + ": " +
                          (m.is_mla() ? std::string("missing field '") + f +
                                            "' (an integer >= 1) for latent attention"
                                      : std::string("needs kv_lora_rank >= 1 (latent attention)")));
    }
  }
  if (!m.is_mla() && m.q_lora_rank > 0) {
    throw ScenarioError(w.child("q_lora_rank").at(n) +
                        ": needs kv_lora_rank >= 1 (latent attention)");
  }
}

LlmSpec parse_fields(const YAML::Node& n, const YamlWhere& w) {
  const Params p = model_def_spec().resolve(n, w);
  auto need = [&](const char* field, bool ok, const std::string& expected) {
    if (ok) return;
    // At the field's own line when it is there (from hf_config: the file), else the entry's.
    const YAML::Node value = n.IsMap() ? n[field] : YAML::Node();
    throw ScenarioError(w.child(field).at(value.IsDefined() ? value : n) + ": " + expected);
  };
  LlmSpec m;
  m.name = p.get_string("name");
  need("name", !m.name.empty(), "missing field 'name' (the name fleet.model refers to)");
  m.layers = get32(p, "num_hidden_layers");
  m.hidden_size = get32(p, "hidden_size");
  m.num_heads = get32(p, "num_attention_heads");
  m.vocab_size = get32(p, "vocab_size");
  for (const char* f : {"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"}) {
    const bool given = n.IsMap() && n[f].IsDefined() && !n[f].IsNull();
    need(f, p.get_int(f) > 0,
         given ? "expected an integer >= 1 (from the model's config.json), got " +
                     std::to_string(p.get_int(f))
               : std::string("missing field '") + f + "' (an integer >= 1, from " +
                     "the model's config.json)");
  }
  m.num_kv_heads = get32(p, "num_key_value_heads");
  if (m.num_kv_heads == 0) m.num_kv_heads = m.num_heads;
  need("num_key_value_heads", m.num_heads % m.num_kv_heads == 0,
       "num_attention_heads (" + std::to_string(m.num_heads) + ") must be a multiple of it (" +
           std::to_string(m.num_kv_heads) + ")");
  m.head_dim = get32(p, "head_dim");
  if (m.head_dim == 0) {
    need("head_dim", m.hidden_size % m.num_heads == 0,
         "missing field 'head_dim': hidden_size is not a multiple of num_attention_heads");
    m.head_dim = m.hidden_size / m.num_heads;
  }
  m.intermediate_size = get32(p, "intermediate_size");
  m.num_experts = get32(p, "num_experts");
  m.experts_per_token = get32(p, "num_experts_per_tok");
  m.moe_intermediate_size = get32(p, "moe_intermediate_size");
  if (m.num_experts > 0) {
    need("num_experts_per_tok", m.experts_per_token >= 1 && m.experts_per_token <= m.num_experts,
         "expected an integer in [1, num_experts] for a mixture of experts");
    need("moe_intermediate_size", m.moe_intermediate_size > 0,
         "missing field 'moe_intermediate_size' (an integer >= 1) for a mixture of experts");
  } else {
    need("intermediate_size", m.intermediate_size > 0,
         "missing field 'intermediate_size' (an integer >= 1; or num_experts, "
         "num_experts_per_tok and moe_intermediate_size for a mixture of experts)");
    need("num_experts_per_tok", m.experts_per_token == 0 && m.moe_intermediate_size == 0,
         "expert fields need num_experts >= 1");
  }
  m.shared_expert_intermediate_size = get32(p, "shared_expert_intermediate_size");
  m.dense_layers = get32(p, "dense_layers");
  if (m.shared_expert_intermediate_size > 0 || m.dense_layers > 0) {
    need(m.shared_expert_intermediate_size > 0 ? "shared_expert_intermediate_size" : "dense_layers",
         m.num_experts > 0, "needs a mixture of experts (num_experts >= 1)");
  }
  need("dense_layers", m.dense_layers < m.layers,
       "expected fewer than num_hidden_layers (" + std::to_string(m.layers) + ")");
  if (m.dense_layers > 0) {
    need("intermediate_size", m.intermediate_size > 0,
         "missing field 'intermediate_size': the width of the dense layers' MLP");
  }
  parse_latent_attention(p, n, w, m);
  m.sliding_window = get32(p, "sliding_window");
  m.sliding_layers = get32(p, "sliding_window_layers");
  if (m.sliding_window > 0) {
    need("sliding_window_layers", m.sliding_layers >= 1 && m.sliding_layers < m.layers,
         "expected an integer in [1, num_hidden_layers - 1] with a sliding_window (a model "
         "whose every layer slides is not modelled: its prefix hits need vLLM's window "
         "lookup)");
    need("sliding_window", !m.is_mla(), "a sliding window with latent attention is not modelled");
  } else {
    need("sliding_window_layers", m.sliding_layers == 0, "needs a sliding_window >= 1");
  }
  m.tied_embeddings = p.get_bool("tie_word_embeddings");
  m.qk_norm = p.get_bool("qk_norm");
  m.max_position_embeddings = get32(p, "max_position_embeddings");
  m.quantized_experts_only = p.get_string("quantized") == "experts";
  need("quantized", !m.quantized_experts_only || m.num_experts > 0,
       "'experts' needs a mixture of experts (num_experts >= 1)");
  const auto& dtypes = weight_dtype_names();
  m.weight_dtype = static_cast<WeightDtype>(
      std::find(dtypes.begin(), dtypes.end(), p.get_string("weight_dtype")) - dtypes.begin());
  m.source = p.get_string("source");
  const double from_shapes =
      m.linear_params() + m.embedding_params() * (m.tied_embeddings ? 1.0 : 2.0);
  m.params_b = p.get_double("params_b") > 0 ? p.get_double("params_b") : from_shapes / 1e9;
  need("params_b", m.params_b * 1e9 >= from_shapes * 0.99,
       "the shapes alone hold " + std::to_string(from_shapes / 1e9) +
           " billion parameters; expected at least that (or 0 to compute it)");
  return m;
}

// With hf_config, the file's fields under the entry's own.
LlmSpec parse_one(const YAML::Node& n, const YamlWhere& w) {
  const YAML::Node file = n.IsMap() ? n["hf_config"] : YAML::Node();
  if (!file.IsDefined() || file.IsNull()) return parse_fields(n, w);
  const YamlWhere fw = w.child("hf_config");
  const std::string path =
      input_file_path(scalar_text(file, fw, "the path of a Hugging Face config.json"), fw, file,
                      "Hugging Face config.json", "download it with the checkpoint (config.json)");
  YAML::Node merged;
  try {
    merged = hf_config_fields(path, n["weight_dtype"].IsDefined());
  } catch (const ScenarioError& e) {
    throw ScenarioError(fw.at(file) + ": " + e.what());
  }
  for (const auto& kv : n) merged[kv.first.Scalar()] = kv.second;
  if (!n["source"].IsDefined()) merged["source"] = path;
  // The fields written here keep their lines; those taken from the file have none, and an error
  // in one of them names the file and the line that points to it.
  YamlWhere from_file = w;
  from_file.unmarked = path + " (" + fw.place(file) + ": hf_config)";
  return parse_fields(merged, from_file);
}

}  // namespace

std::vector<LlmSpec> parse_model_defs(const YAML::Node& list, const YamlWhere& where) {
  return parse_definitions<LlmSpec>(
      list, where, "model", "fleetsim list models",
      "{name, num_hidden_layers, hidden_size, ...} (fleetsim describe model)", model_names(),
      parse_one);
}

}  // namespace fleetsim
