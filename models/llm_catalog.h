// The LLMs a pod can serve: the shapes from each model's Hugging Face config.json, which fix its
// weight bytes, KV bytes per token and FLOPs per token.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

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
  std::int32_t weight_bytes = 2;       // bytes per linear-layer parameter: 2 BF16, 1 FP8
  std::string source;                  // the config.json / model card the figures come from
  // Mixture of experts (0 = a dense model): every layer's MLP is num_experts gated MLPs of
  // moe_intermediate_size, of which a router picks experts_per_token for each token.
  std::int32_t num_experts = 0;            // num_experts
  std::int32_t experts_per_token = 0;      // num_experts_per_tok
  std::int32_t moe_intermediate_size = 0;  // moe_intermediate_size
  // tie_word_embeddings: lm_head is the embedding table, held once (none of the catalog's).
  bool tied_embeddings = false;

  bool is_moe() const { return num_experts > 0; }
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
  // Bytes of all weights: linear layers at weight_bytes, everything else (embeddings, lm_head,
  // norms, biases, routers) in BF16 as FP8 checkpoints keep them.
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
