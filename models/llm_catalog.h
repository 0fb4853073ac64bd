// The LLMs a pod can serve: the shapes from each model's Hugging Face config.json, which fix its
// weight bytes, KV bytes per token and FLOPs per token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

// How a checkpoint stores its linear-layer weights (embeddings, lm_head and norms stay BF16).
enum class WeightDtype {
  kBf16,  // BF16 or FP16
  kFp8,   // FP8 e4m3 (block or per-channel scales): W8A8 on FP8 tensor cores, else W8A16
  kInt8,  // INT8 W8A8 (per-channel scales, dynamic per-token activations)
  kInt4,  // INT4 W4A16 (AWQ, GPTQ): group-128 FP16 scales and 4-bit zero points
  kFp4,   // NVFP4 W4A4: an FP8 scale per 16 weights; W4A16 where there are no FP4 tensor cores
};

// The names a scenario uses (bf16, fp8, int8, int4, fp4), in enum order.
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

  bool is_moe() const { return num_experts > 0; }
  double bytes_per_linear_weight() const { return bytes_per_weight(weight_dtype); }
  // Parameters of the decoder's linear layers a token is multiplied by (q, k, v, o, and the
  // gate, up, down of the dense MLP or of the router's chosen experts): the FLOPs of a token are
  // twice this. Biases, norms and MoE routers are left out (under 0.1%).
  double active_params() const;
  // Parameters of all the decoder's linear layers (every expert of an MoE model): the ones
  // quantized in FP8 checkpoints and held in memory. Equal to active_params() when dense.
  double linear_params() const;
  // Parameters of one expert of one layer (gate, up and down), 0 when dense.
  double expert_params() const;
  // Parameters of the input embedding table (vocab x hidden). A step gathers only its rows for
  // the step's tokens, so the table is not streamed like the other weights.
  double embedding_params() const;
  // Bytes of all weights: linear layers at bytes_per_linear_weight(), everything else (embeddings,
  // lm_head, norms, biases, routers) in BF16 as FP8 checkpoints keep them.
  double weight_bytes_total() const;
  // KV-cache bytes per token on one GPU: 2 (K and V) x layers x KV heads on this GPU x head_dim
  // x dtype bytes. KV heads are split across `tp` GPUs; each GPU holds at least one (vLLM
  // replicates KV heads when tp > num_kv_heads).
  std::int64_t kv_bytes_per_token(std::int32_t kv_dtype_bytes, std::int32_t tp = 1) const;
};

const std::vector<LlmSpec>& llm_catalog();

// The entry named `name`; throws UnknownNameError("model", name, valid names) if there is none.
const LlmSpec& find_model(const std::string& name);
// Same, looking first among `extra` (a scenario's own model definitions, fleet.models).
const LlmSpec& find_model(const std::vector<LlmSpec>& extra, const std::string& name);

std::vector<std::string> model_names();

}  // namespace fleetsim
