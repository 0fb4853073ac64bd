#include "models/llm_catalog.h"

#include <algorithm>

#include "sim/named.h"

namespace fleetsim {

namespace {

// Bytes of a parameter kept in BF16 (embeddings, lm_head, norms, biases).
constexpr double kBf16Bytes = 2.0;

// Shapes are copied from each repository's config.json on Hugging Face. params_b is computed
// from those shapes (linear layers + embedding + untied lm_head + norms + biases) and agrees with
// the model card's rounded figure. None of these models ties its embeddings
// ("tie_word_embeddings": false), so lm_head is a separate vocab x hidden matrix.
//
// FP8 checkpoints quantize only the linear layers of the decoder blocks; embed_tokens, lm_head
// and the norms stay BF16:
//  - Qwen/Qwen3-32B-FP8: quantization_config {"quant_method": "fp8", "fmt": "e4m3",
//    "weight_block_size": [128, 128]}; the model card: "fine-grained fp8 quantization with block
//    size of 128". Scales are one float per 128x128 block (0.02% of the weights): ignored.
//  - RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic (llm-compressor FP8_DYNAMIC scheme): the card says
//    only "the weights and activations of the linear operators within transformers blocks are
//    quantized"; lm_head is in the recipe's ignore list. Per-channel scales: negligible.
std::vector<LlmSpec> make_catalog() {
  return {
      // huggingface.co/Qwen/Qwen3-32B/blob/main/config.json; card: 32.8B, 31.2B non-embedding.
      {"Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, 32.7621, WeightDtype::kBf16,
       "huggingface.co/Qwen/Qwen3-32B config.json"},
      // huggingface.co/Qwen/Qwen3-32B-FP8/blob/main/config.json: same shapes, FP8 linear layers.
      {"Qwen3-32B-FP8", 64, 5120, 64, 8, 128, 25600, 151936, 32.7621, WeightDtype::kFp8,
       "huggingface.co/Qwen/Qwen3-32B-FP8 config.json"},
      // huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/config.json (head_dim = 8192 / 64);
      // card: 72.7B.
      {"Qwen2.5-72B-Instruct", 80, 8192, 64, 8, 128, 29568, 152064, 72.7062, WeightDtype::kBf16,
       "huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json"},
      // huggingface.co/RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic config.json: same shapes.
      {"Qwen2.5-72B-Instruct-FP8-dynamic", 80, 8192, 64, 8, 128, 29568, 152064, 72.7062,
       WeightDtype::kFp8, "huggingface.co/RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic config.json"},
      // huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json (head_dim = 3584 / 28);
      // card: 7.61B, 6.53B non-embedding.
      {"Qwen2.5-7B-Instruct", 28, 3584, 28, 4, 128, 18944, 152064, 7.6156, WeightDtype::kBf16,
       "huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json"},
      // huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json; card: 8.03B.
      {"Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.0303, WeightDtype::kBf16,
       "huggingface.co/meta-llama/Llama-3.1-8B config.json"},
      // huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json; card: 70.6B.
      {"Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, 70.5537, WeightDtype::kBf16,
       "huggingface.co/meta-llama/Llama-3.1-70B config.json"},
      // huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json: Llama 3.1 70B's
      // shapes.
      {"Llama-3.3-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256, 70.5537, WeightDtype::kBf16,
       "huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json"},
      // Mixtures of experts. huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json: every
      // layer sparse (decoder_sparse_step 1, no mlp_only_layers), 128 experts of 768, 8 a token;
      // card: 30.5B total, 3.3B activated, 29.9B non-embedding.
      {"Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 6144, 151936, 30.5321, WeightDtype::kBf16,
       "huggingface.co/Qwen/Qwen3-30B-A3B config.json", 128, 8, 768},
      // huggingface.co/Qwen/Qwen3-30B-A3B-FP8 config.json: same shapes, block-FP8 linear layers
      // (the routers, embeddings and lm_head stay BF16).
      {"Qwen3-30B-A3B-FP8", 48, 2048, 32, 4, 128, 6144, 151936, 30.5321, WeightDtype::kFp8,
       "huggingface.co/Qwen/Qwen3-30B-A3B-FP8 config.json", 128, 8, 768},
      // huggingface.co/Qwen/Qwen3-235B-A22B-FP8/blob/main/config.json: 94 layers, 128 experts of
      // 1536, 8 a token; card: 235B total, 22B activated, 234B non-embedding.
      {"Qwen3-235B-A22B-FP8", 94, 4096, 64, 4, 128, 12288, 151936, 235.0936, WeightDtype::kFp8,
       "huggingface.co/Qwen/Qwen3-235B-A22B-FP8 config.json", 128, 8, 1536},
  };
}

}  // namespace

namespace {

// q, k, v projections (h -> q + 2 kv) and the o projection (q -> h) of one layer.
double attention_params(const LlmSpec& m) {
  const double h = m.hidden_size;
  const double q = static_cast<double>(m.num_heads) * m.head_dim;
  const double kv = static_cast<double>(m.num_kv_heads) * m.head_dim;
  return h * (q + 2 * kv) + q * h;
}

}  // namespace

double LlmSpec::expert_params() const {
  return is_moe() ? 3.0 * hidden_size * static_cast<double>(moe_intermediate_size) : 0.0;
}

double LlmSpec::active_params() const {
  // Gate and up (h -> 2 x I) and down (I -> h) of the dense MLP, or of each chosen expert.
  const double mlp = is_moe() ? experts_per_token * expert_params()
                              : 3.0 * hidden_size * static_cast<double>(intermediate_size);
  return (attention_params(*this) + mlp) * layers;
}

double LlmSpec::linear_params() const {
  if (!is_moe()) return active_params();
  return (attention_params(*this) + num_experts * expert_params()) * layers;
}

double LlmSpec::embedding_params() const { return static_cast<double>(vocab_size) * hidden_size; }

double LlmSpec::weight_bytes_total() const {
  const double linear = linear_params();
  const double other = params_b * 1e9 - linear;
  return linear * bytes_per_linear_weight() + other * kBf16Bytes;
}

std::int64_t LlmSpec::kv_bytes_per_token(std::int32_t kv_dtype_bytes, std::int32_t tp) const {
  const std::int32_t parts = std::max<std::int32_t>(1, tp);
  const std::int32_t heads_here = std::max<std::int32_t>(1, (num_kv_heads + parts - 1) / parts);
  return std::int64_t{2} * layers * heads_here * head_dim * kv_dtype_bytes;
}

const std::vector<std::string>& weight_dtype_names() {
  static const std::vector<std::string> kNames = {"bf16", "fp8", "int8", "int4", "fp4"};
  return kNames;
}

const std::string& weight_dtype_name(WeightDtype d) {
  return weight_dtype_names().at(static_cast<size_t>(d));
}

double bytes_per_weight(WeightDtype d) {
  switch (d) {
    case WeightDtype::kBf16:
      return 2.0;
    case WeightDtype::kFp8:
    case WeightDtype::kInt8:
      return 1.0;  // one scale per 128 x 128 block or per channel: under 0.1%
    case WeightDtype::kInt4:
      // AWQ and GPTQ defaults: groups of 128 weights share an FP16 scale and a 4-bit zero
      // point (AutoAWQ q_group_size 128, GPTQ group_size 128): 4 + 20/128 bits.
      return (4.0 + 20.0 / 128.0) / 8.0;
    case WeightDtype::kFp4:
      // NVFP4: an FP8 e4m3 scale per 16 weights (NVIDIA's NVFP4 format; one FP32 per tensor
      // besides): 4 + 8/16 bits.
      return (4.0 + 8.0 / 16.0) / 8.0;
  }
  return 2.0;
}

const std::vector<LlmSpec>& llm_catalog() {
  static const std::vector<LlmSpec> kCatalog = make_catalog();
  return kCatalog;
}

std::vector<std::string> model_names() { return entry_names(llm_catalog()); }

const LlmSpec& find_model(const std::string& name) {
  return find_entry(llm_catalog(), "model", name);
}

const LlmSpec& find_model(const std::vector<LlmSpec>& extra, const std::string& name) {
  return find_entry_in(extra, llm_catalog(), "model", name);
}

}  // namespace fleetsim
