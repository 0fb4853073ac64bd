// The LLMs a pod can serve: the shapes from each model's Hugging Face config.json, which fix its
// weight bytes, KV bytes per token and FLOPs per token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

// How a checkpoint stores its linear-layer weights (embeddings, lm_head and norms stay BF16).
enum class WeightDtype {
  kBf16,   // BF16 or FP16
  kFp8,    // FP8 e4m3 (block or per-channel scales): W8A8 on FP8 tensor cores, else W8A16
  kInt8,   // INT8 W8A8 (per-channel scales, dynamic per-token activations)
  kInt4,   // INT4 W4A16 (AWQ, GPTQ): group-128 FP16 scales and 4-bit zero points
  kFp4,    // NVFP4 W4A4: an FP8 scale per 16 weights; W4A16 where there are no FP4 tensor cores
  kMxfp4,  // MXFP4 (OCP microscaling): an E8M0 scale per 32 weights; W4A16 (vLLM's default)
};

// The names a scenario uses (bf16, fp8, int8, int4, fp4, mxfp4), in enum order.
const std::vector<std::string>& weight_dtype_names();
const std::string& weight_dtype_name(WeightDtype d);
// Stored bytes per weight, scales and zero points included.
double bytes_per_weight(WeightDtype d);

struct LlmSpec {
  std::string name;
  std::int32_t layers = 0;             // num_hidden_layers
  std::int32_t hidden_size = 0;        // hidden_size
  std::int32_t num_heads = 0;          // num_attention_heads
  std::int32_t num_kv_heads = 0;       // num_key_value_heads
  std::int32_t head_dim = 0;           // head_dim (hidden_size / num_heads where absent)
  std::int32_t intermediate_size = 0;  // intermediate_size (gated MLP: gate, up, down)
  std::int32_t vocab_size = 0;         // vocab_size
  double params_b = 0;                 // total parameters, billions (embeddings and lm_head in)
  WeightDtype weight_dtype = WeightDtype::kBf16;  // the linear layers' storage
  std::string source;  // the config.json / model card the figures come from
  // Mixture of experts (0 = a dense model): every layer's MLP is num_experts gated MLPs of
  // moe_intermediate_size, of which a router picks experts_per_token for each token.
  std::int32_t num_experts = 0;            // num_experts
  std::int32_t experts_per_token = 0;      // num_experts_per_tok
  std::int32_t moe_intermediate_size = 0;  // moe_intermediate_size
  // tie_word_embeddings: lm_head is the embedding table, held once (none of the catalog's).
  bool tied_embeddings = false;
  // An MoE model's other MLPs (DeepSeek-V3, Kimi K2, Qwen2-MoE, GLM-4.5): a shared expert every
  // token passes through beside its routed ones (DeepSeek: n_shared_experts x
  // moe_intermediate_size wide; Qwen2-MoE: shared_expert_intermediate_size), and layers whose
  // MLP is dense, intermediate_size wide (DeepSeek's leading first_k_dense_replace, Qwen's
  // mlp_only_layers; where they sit does not change a step's cost).
  std::int32_t shared_expert_intermediate_size = 0;
  std::int32_t dense_layers = 0;
  // Multi-head latent attention (DeepSeek-V2/V3, Kimi K2; 0 = grouped KV heads): K and V are
  // one compressed latent of kv_lora_rank plus a shared rotary key of qk_rope_head_dim a token,
  // up-projected per head to qk_nope_head_dim keys and v_head_dim values; queries go through a
  // q_lora_rank bottleneck (0 = a direct projection).
  std::int32_t kv_lora_rank = 0;
  std::int32_t q_lora_rank = 0;
  std::int32_t qk_nope_head_dim = 0;
  std::int32_t qk_rope_head_dim = 0;
  std::int32_t v_head_dim = 0;
  // Sliding-window attention on some layers (gpt-oss: every other one; Gemma 3: five in six):
  // a query of those layers sees the last sliding_window tokens only (0 = no window).
  std::int32_t sliding_window = 0;
  std::int32_t sliding_layers = 0;
  // A per-head RMSNorm of the queries and keys before the rotary embedding (Qwen3, Gemma 3,
  // OLMo 2, GLM-4.5's use_qk_norm): one more element-wise pass over the rank's q and k.
  bool qk_norm = false;
  // weight_dtype covers the routed experts only; attention and the rest stay BF16 (gpt-oss's
  // MXFP4 checkpoints: modules_to_not_convert lists the attention, router, embeddings, lm_head).
  bool quantized_experts_only = false;
  // The longest sequence the model was trained for (max_position_embeddings, rope scaling
  // applied): vLLM's default max_model_len. 0 = not known, no limit.
  std::int32_t max_position_embeddings = 0;

  bool is_moe() const { return num_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  // Layers whose MLP is the routed experts (every layer but the dense ones).
  std::int32_t moe_layers() const { return is_moe() ? layers - dense_layers : 0; }
  std::int32_t full_attention_layers() const {
    return sliding_window > 0 ? layers - sliding_layers : layers;
  }
  // Query-key width and value width of one head's attention: the decompressed heads of MLA in a
  // prefill (qk_nope + qk_rope, v_head_dim), or in a decode, where vLLM multiplies the queries
  // into the latent space instead (kv_lora + qk_rope, kv_lora); head_dim twice for GQA.
  std::int32_t attention_qk_dim(bool decode) const;
  std::int32_t attention_v_dim(bool decode) const;
  double bytes_per_linear_weight() const { return bytes_per_weight(weight_dtype); }
  // Parameters of the decoder's linear layers a token is multiplied by (q, k, v, o, and the
  // gate, up, down of the dense MLP or of the router's chosen experts): the FLOPs of a token are
  // twice this. Biases, norms and MoE routers are left out (under 0.1%).
  double active_params() const;
  // What model cards call "activated": active_params() plus the embedding table and lm_head
  // (one table when they are tied).
  double activated_params() const;
  // Parameters of all the decoder's linear layers (every expert of an MoE model): the ones
  // quantized in FP8 checkpoints and held in memory. Equal to active_params() when dense.
  double linear_params() const;
  // Parameters of one expert of one layer (gate, up and down), 0 when dense.
  double expert_params() const;
  // Bytes of one routed expert over every MoE layer, as the checkpoint stores it.
  double expert_bytes() const { return expert_params() * bytes_per_linear_weight() * moe_layers(); }
  // Of active_params() and linear_params(), the ones stored in weight_dtype (all of them, or
  // with quantized_experts_only the routed experts'); the rest are BF16.
  double active_quantized_params() const;
  double quantized_params() const;
  // Parameters every tensor-parallel rank holds whole instead of a 1/tp share: MLA's query and
  // KV down-projections (q_a_proj, kv_a_proj_with_mqa are ReplicatedLinear in vLLM's
  // deepseek_v2.py), in every layer; 0 for grouped KV heads. Their stored bytes beside.
  double replicated_params() const;
  double replicated_weight_bytes() const;
  // MLA's K and V up-projection (kv_b_proj) of one layer: a prefill that finds its context
  // cached re-expands that context's latent through it (0 without MLA).
  double kv_up_projection_params() const;
  // Parameters of the input embedding table (vocab x hidden). A step gathers only its rows for
  // the step's tokens, so the table is not streamed like the other weights.
  double embedding_params() const;
  // Bytes of all weights: linear layers at bytes_per_linear_weight(), everything else (embeddings,
  // lm_head, norms, biases, routers) in BF16 as FP8 checkpoints keep them.
  double weight_bytes_total() const;
  // KV-cache bytes per token of one layer on one GPU: 2 (K and V) x KV heads on this GPU x
  // head_dim x dtype bytes. KV heads are split across `tp` GPUs; each GPU holds at least one
  // (vLLM replicates KV heads when tp > num_kv_heads). MLA's latent (kv_lora_rank +
  // qk_rope_head_dim) is not split: every rank holds it whole (vLLM's MLAAttentionSpec).
  std::int64_t kv_bytes_per_token_layer(std::int32_t kv_dtype_bytes, std::int32_t tp = 1) const;
  // The same over every layer: what one token costs where every layer keeps it (all of them
  // within a sliding window).
  std::int64_t kv_bytes_per_token(std::int32_t kv_dtype_bytes, std::int32_t tp = 1) const;
};

const std::vector<LlmSpec>& llm_catalog();

// The entry named `name`; throws UnknownNameError("model", name, valid names) if there is none.
const LlmSpec& find_model(const std::string& name);
// Same, looking first among `extra` (a scenario's own model definitions, fleet.models).
const LlmSpec& find_model(const std::vector<LlmSpec>& extra, const std::string& name);

std::vector<std::string> model_names();

// The busiest stage of `llm` split over `pp` pipeline stages (vLLM --pipeline-parallel-size):
// ceil(layers / pp) of its layers (vLLM's get_pp_indices gives the remainder's extra layers to
// the stages before the last), their dense, MoE and sliding-window layers in proportion, and one
// vocabulary table: the first stage holds the embedding, the last the lm_head (a stage spec is
// marked tied_embeddings, one table read whole as its lm_head, the last stage's work). pp 1
// returns `llm` unchanged; pp above the layer count throws ScenarioError.
LlmSpec pipeline_stage(const LlmSpec& llm, std::int32_t pp);

}  // namespace fleetsim
