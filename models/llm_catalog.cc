#include "models/llm_catalog.h"

#include <algorithm>
#include <cmath>

#include "sim/errors.h"
#include "sim/named.h"

namespace fleetsim {

namespace {

// Bytes of a parameter kept in BF16 (embeddings, lm_head, norms, biases).
constexpr double kBf16Bytes = 2.0;

// Shapes are copied from each repository's config.json on Hugging Face. params_b is computed
// from those shapes (linear layers + embedding + untied lm_head + norms + biases) and agrees with
// the model card's rounded figure. Only Qwen3-0.6B ties its embeddings ("tie_word_embeddings":
// true); the others hold lm_head as a separate vocab x hidden matrix.
//
// FP8 checkpoints quantize only the linear layers of the decoder blocks; embed_tokens, lm_head
// and the norms stay BF16:
//  - Qwen/Qwen3-32B-FP8: quantization_config {"quant_method": "fp8", "fmt": "e4m3",
//    "weight_block_size": [128, 128]}; the model card: "fine-grained fp8 quantization with block
//    size of 128". Scales are one float per 128x128 block (0.02% of the weights): ignored.
//  - RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic (llm-compressor FP8_DYNAMIC scheme): the card says
//    only "the weights and activations of the linear operators within transformers blocks are
//    quantized"; lm_head is in the recipe's ignore list. Per-channel scales: negligible.
// deepseek-ai/DeepSeek-V3 (and DeepSeek-R1, the same shapes) config.json: 61 layers of
// multi-head latent attention (128 heads, q_lora_rank 1536, kv_lora_rank 512, qk_nope 128, qk_rope
// 64, v 128); the first 3 layers dense (first_k_dense_replace, intermediate 18432), the other 58
// 256 routed experts of 2048 (8 a token) and one shared expert; vocab 129280; FP8 e4m3 with
// 128 x 128 block scales, as released. Card: 671B parameters (and a 14B multi-token-prediction
// module that vLLM loads only to speculate), 37B activated.
// The entry with its context length (config.json's max_position_embeddings; where rope scaling
// is declared, its original length x factor gives the same figure).
LlmSpec with_context(std::int32_t positions, LlmSpec m) {
  m.max_position_embeddings = positions;
  return m;
}

// The entry with lm_head sharing the embedding table (config.json's "tie_word_embeddings").
LlmSpec tied(LlmSpec m) {
  m.tied_embeddings = true;
  return m;
}

// Qwen3 normalizes each query and key head before the rotary embedding (Qwen3Attention's q_norm
// and k_norm in vLLM's qwen3.py and qwen3_moe.py).
LlmSpec qk_normed(LlmSpec m) {
  m.qk_norm = true;
  return m;
}

LlmSpec deepseek_v3(const char* name) {
  LlmSpec m{name,
            61,
            7168,
            128,
            128,
            128,
            18432,
            129280,
            671.0264,
            WeightDtype::kFp8,
            std::string("huggingface.co/deepseek-ai/") + name + " config.json",
            256,
            8,
            2048};
  m.shared_expert_intermediate_size = 2048;
  m.dense_layers = 3;
  m.kv_lora_rank = 512;
  m.q_lora_rank = 1536;
  m.qk_nope_head_dim = 128;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  m.max_position_embeddings = 163840;  // yarn: 4096 x factor 40
  return m;
}

// openai/gpt-oss-20b and -120b config.json: 64 query heads and 8 KV heads of 64, attention
// alternating between a 128-token sliding window and full (layer_types), experts of 2880 (4 a
// token), vocab 201088; the experts in MXFP4, attention, router, embeddings and lm_head in BF16
// (modules_to_not_convert). arXiv 2508.10925, table 1: 20.91B and 116.83B parameters.
LlmSpec gpt_oss(const char* name, std::int32_t layers, std::int32_t experts, double params_b) {
  LlmSpec m{name,
            layers,
            2880,
            64,
            8,
            64,
            2880,
            201088,
            params_b,
            WeightDtype::kMxfp4,
            std::string("huggingface.co/openai/") + name + " config.json",
            experts,
            4,
            2880};
  m.sliding_window = 128;
  m.sliding_layers = layers / 2;
  m.quantized_experts_only = true;
  m.max_position_embeddings = 131072;  // yarn: 4096 x factor 32
  return m;
}

std::vector<LlmSpec> make_catalog() {
  return {
      // huggingface.co/Qwen/Qwen3-32B/blob/main/config.json; card: 32.8B, 31.2B non-embedding.
      qk_normed(
          with_context(40960, {"Qwen3-32B", 64, 5120, 64, 8, 128, 25600, 151936, 32.7621,
                               WeightDtype::kBf16, "huggingface.co/Qwen/Qwen3-32B config.json"})),
      // huggingface.co/Qwen/Qwen3-32B-FP8/blob/main/config.json: same shapes, FP8 linear layers.
      qk_normed(with_context(
          40960, {"Qwen3-32B-FP8", 64, 5120, 64, 8, 128, 25600, 151936, 32.7621, WeightDtype::kFp8,
                  "huggingface.co/Qwen/Qwen3-32B-FP8 config.json"})),
      // huggingface.co/Qwen/Qwen3-14B/blob/main/config.json; card: 14.8B, 13.2B non-embedding.
      qk_normed(
          with_context(40960, {"Qwen3-14B", 40, 5120, 40, 8, 128, 17408, 151936, 14.7683,
                               WeightDtype::kBf16, "huggingface.co/Qwen/Qwen3-14B config.json"})),
      // huggingface.co/Qwen/Qwen3-8B/blob/main/config.json; card: 8.2B, 6.95B non-embedding.
      qk_normed(
          with_context(40960, {"Qwen3-8B", 36, 4096, 32, 8, 128, 12288, 151936, 8.1907,
                               WeightDtype::kBf16, "huggingface.co/Qwen/Qwen3-8B config.json"})),
      // huggingface.co/Qwen/Qwen3-0.6B/blob/main/config.json (16 heads of 128 on a hidden size of
      // 1,024; "tie_word_embeddings": true); card: 0.6B, 0.44B non-embedding.
      tied(qk_normed(
          with_context(40960, {"Qwen3-0.6B", 28, 1024, 16, 8, 128, 3072, 151936, 0.5960,
                               WeightDtype::kBf16, "huggingface.co/Qwen/Qwen3-0.6B config.json"}))),
      // huggingface.co/Qwen/Qwen2.5-72B-Instruct/blob/main/config.json (head_dim = 8192 / 64);
      // card: 72.7B.
      with_context(32768,
                   {"Qwen2.5-72B-Instruct", 80, 8192, 64, 8, 128, 29568, 152064, 72.7062,
                    WeightDtype::kBf16, "huggingface.co/Qwen/Qwen2.5-72B-Instruct config.json"}),
      // huggingface.co/RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic config.json: same shapes.
      with_context(32768, {"Qwen2.5-72B-Instruct-FP8-dynamic", 80, 8192, 64, 8, 128, 29568, 152064,
                           72.7062, WeightDtype::kFp8,
                           "huggingface.co/RedHatAI/Qwen2.5-72B-Instruct-FP8-dynamic config.json"}),
      // huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/config.json (head_dim = 3584 / 28);
      // card: 7.61B, 6.53B non-embedding.
      with_context(32768,
                   {"Qwen2.5-7B-Instruct", 28, 3584, 28, 4, 128, 18944, 152064, 7.6156,
                    WeightDtype::kBf16, "huggingface.co/Qwen/Qwen2.5-7B-Instruct config.json"}),
      // huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json; card: 8.03B.
      with_context(131072,
                   {"Llama-3.1-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.0303, WeightDtype::kBf16,
                    "huggingface.co/meta-llama/Llama-3.1-8B config.json"}),
      // huggingface.co/meta-llama/Llama-3.1-8B-Instruct config.json: the base model's shapes.
      with_context(131072, {"Llama-3.1-8B-Instruct", 32, 4096, 32, 8, 128, 14336, 128256, 8.0303,
                            WeightDtype::kBf16,
                            "huggingface.co/meta-llama/Llama-3.1-8B-Instruct config.json"}),
      // huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json; card: 70.6B.
      with_context(131072,
                   {"Llama-3.1-70B", 80, 8192, 64, 8, 128, 28672, 128256, 70.5537,
                    WeightDtype::kBf16, "huggingface.co/meta-llama/Llama-3.1-70B config.json"}),
      // huggingface.co/meta-llama/Llama-3.1-70B-Instruct config.json: the base model's shapes.
      with_context(131072, {"Llama-3.1-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256, 70.5537,
                            WeightDtype::kBf16,
                            "huggingface.co/meta-llama/Llama-3.1-70B-Instruct config.json"}),
      // huggingface.co/meta-llama/Llama-3.3-70B-Instruct/blob/main/config.json: Llama 3.1 70B's
      // shapes.
      with_context(131072, {"Llama-3.3-70B-Instruct", 80, 8192, 64, 8, 128, 28672, 128256, 70.5537,
                            WeightDtype::kBf16,
                            "huggingface.co/meta-llama/Llama-3.3-70B-Instruct config.json"}),
      // huggingface.co/RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic config.json: the same
      // shapes, llm-compressor FP8_DYNAMIC on the decoder's linear layers (lm_head ignored);
      // the model of llm-d's P/D disaggregation guide.
      with_context(131072, {"Llama-3.3-70B-Instruct-FP8-dynamic", 80, 8192, 64, 8, 128, 28672,
                            128256, 70.5537, WeightDtype::kFp8,
                            "huggingface.co/RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic "
                            "config.json"}),
      // Mixtures of experts. huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json: every
      // layer sparse (decoder_sparse_step 1, no mlp_only_layers), 128 experts of 768, 8 a token;
      // card: 30.5B total, 3.3B activated, 29.9B non-embedding.
      qk_normed(with_context(
          40960, {"Qwen3-30B-A3B", 48, 2048, 32, 4, 128, 6144, 151936, 30.5321, WeightDtype::kBf16,
                  "huggingface.co/Qwen/Qwen3-30B-A3B config.json", 128, 8, 768})),
      // huggingface.co/Qwen/Qwen3-30B-A3B-FP8 config.json: same shapes, block-FP8 linear layers
      // (the routers, embeddings and lm_head stay BF16).
      qk_normed(with_context(
          40960,
          {"Qwen3-30B-A3B-FP8", 48, 2048, 32, 4, 128, 6144, 151936, 30.5321, WeightDtype::kFp8,
           "huggingface.co/Qwen/Qwen3-30B-A3B-FP8 config.json", 128, 8, 768})),
      // huggingface.co/Qwen/Qwen3-235B-A22B-FP8/blob/main/config.json: 94 layers, 128 experts of
      // 1536, 8 a token; card: 235B total, 22B activated, 234B non-embedding.
      qk_normed(with_context(
          40960,
          {"Qwen3-235B-A22B-FP8", 94, 4096, 64, 4, 128, 12288, 151936, 235.0936, WeightDtype::kFp8,
           "huggingface.co/Qwen/Qwen3-235B-A22B-FP8 config.json", 128, 8, 1536})),
      deepseek_v3("DeepSeek-V3"),
      deepseek_v3("DeepSeek-R1"),
      gpt_oss("gpt-oss-20b", 24, 32, 20.9144),
      gpt_oss("gpt-oss-120b", 36, 128, 116.8294),
  };
}

}  // namespace

namespace {

// The attention projections of one layer. Grouped KV heads: q, k, v (h -> q + 2 kv) and o
// (q -> h). MLA (DeepSeek-V2 modeling code): q through its low-rank bottleneck or directly
// (h -> heads x (nope + rope)), the joint latent and rotary key (h -> kv_lora + rope), the
// latent's per-head up-projection (kv_b_proj) and o (heads x v_head_dim -> h).
double attention_params(const LlmSpec& m) {
  const double h = m.hidden_size;
  if (m.is_mla()) {
    const double q_width =
        static_cast<double>(m.num_heads) * (m.qk_nope_head_dim + m.qk_rope_head_dim);
    const double q = m.q_lora_rank > 0 ? h * m.q_lora_rank + m.q_lora_rank * q_width : h * q_width;
    const double kv_down = h * (m.kv_lora_rank + m.qk_rope_head_dim);
    const double o = static_cast<double>(m.num_heads) * m.v_head_dim * h;
    return q + kv_down + m.kv_up_projection_params() + o;
  }
  const double q = static_cast<double>(m.num_heads) * m.head_dim;
  const double kv = static_cast<double>(m.num_kv_heads) * m.head_dim;
  return h * (q + 2 * kv) + q * h;
}

// Gate, up (h -> 2 x width) and down (width -> h) of a gated MLP.
double mlp_params(double hidden, double width) { return 3.0 * hidden * width; }

}  // namespace

std::int32_t LlmSpec::attention_qk_dim(bool decode) const {
  if (!is_mla()) return head_dim;
  return decode ? kv_lora_rank + qk_rope_head_dim : qk_nope_head_dim + qk_rope_head_dim;
}

std::int32_t LlmSpec::attention_v_dim(bool decode) const {
  if (!is_mla()) return head_dim;
  return decode ? kv_lora_rank : v_head_dim;
}

double LlmSpec::kv_up_projection_params() const {
  return is_mla() ? static_cast<double>(kv_lora_rank) * num_heads * (qk_nope_head_dim + v_head_dim)
                  : 0.0;
}

double LlmSpec::replicated_params() const {
  if (!is_mla()) return 0.0;
  return static_cast<double>(layers) * hidden_size *
         (q_lora_rank + kv_lora_rank + qk_rope_head_dim);
}

double LlmSpec::replicated_weight_bytes() const {
  return replicated_params() * (quantized_experts_only ? kBf16Bytes : bytes_per_linear_weight());
}

double LlmSpec::expert_params() const {
  return is_moe() ? mlp_params(hidden_size, moe_intermediate_size) : 0.0;
}

namespace {

// Every layer's attention, the dense layers' MLPs and the expert layers' shared experts, plus
// `experts` routed experts in each expert layer.
double decoder_params(const LlmSpec& m, double experts) {
  const double dense_mlp = mlp_params(m.hidden_size, m.intermediate_size);
  if (!m.is_moe()) return (attention_params(m) + dense_mlp) * m.layers;
  const double expert_layer =
      mlp_params(m.hidden_size, m.shared_expert_intermediate_size) + experts * m.expert_params();
  return attention_params(m) * m.layers + dense_mlp * m.dense_layers +
         expert_layer * m.moe_layers();
}

}  // namespace

double LlmSpec::active_params() const { return decoder_params(*this, experts_per_token); }

double LlmSpec::activated_params() const {
  return active_params() + embedding_params() * (tied_embeddings ? 1.0 : 2.0);
}

double LlmSpec::linear_params() const { return decoder_params(*this, num_experts); }

double LlmSpec::active_quantized_params() const {
  return quantized_experts_only ? experts_per_token * expert_params() * moe_layers()
                                : active_params();
}

double LlmSpec::quantized_params() const {
  return quantized_experts_only ? num_experts * expert_params() * moe_layers() : linear_params();
}

double LlmSpec::embedding_params() const { return static_cast<double>(vocab_size) * hidden_size; }

double LlmSpec::weight_bytes_total() const {
  const double quantized = quantized_params();
  const double other = params_b * 1e9 - quantized;
  return quantized * bytes_per_linear_weight() + other * kBf16Bytes;
}

std::int64_t LlmSpec::kv_bytes_per_token_layer(std::int32_t kv_dtype_bytes, std::int32_t tp) const {
  if (is_mla()) return std::int64_t{kv_lora_rank + qk_rope_head_dim} * kv_dtype_bytes;
  const std::int32_t parts = std::max<std::int32_t>(1, tp);
  const std::int32_t heads_here = std::max<std::int32_t>(1, (num_kv_heads + parts - 1) / parts);
  return std::int64_t{2} * heads_here * head_dim * kv_dtype_bytes;
}

std::int64_t LlmSpec::kv_bytes_per_token(std::int32_t kv_dtype_bytes, std::int32_t tp) const {
  return kv_bytes_per_token_layer(kv_dtype_bytes, tp) * layers;
}

const std::vector<std::string>& weight_dtype_names() {
  static const std::vector<std::string> kNames = {"bf16", "fp8", "int8", "int4", "fp4", "mxfp4"};
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
    case WeightDtype::kMxfp4:
      // OCP Microscaling MXFP4: E2M1 elements, an E8M0 scale per block of 32: 4 + 8/32 bits.
      return (4.0 + 8.0 / 32.0) / 8.0;
  }
  return 2.0;
}

LlmSpec pipeline_stage(const LlmSpec& llm, std::int32_t pp) {
  if (pp <= 1) return llm;
  if (pp > llm.layers) {
    throw ScenarioError("server.pipeline_parallel_size " + std::to_string(pp) + " exceeds " +
                        llm.name + "'s " + std::to_string(llm.layers) +
                        " layers; expected at most one stage a layer");
  }
  LlmSpec s = llm;
  s.layers = (llm.layers + pp - 1) / pp;
  const double share = static_cast<double>(s.layers) / llm.layers;
  const auto in_share = [share](std::int32_t n) {
    return static_cast<std::int32_t>(std::lround(n * share));
  };
  s.dense_layers = std::min(in_share(llm.dense_layers), s.layers);
  s.sliding_layers = std::min(in_share(llm.sliding_layers), s.layers);
  const double tables = llm.embedding_params() * (llm.tied_embeddings ? 1.0 : 2.0);
  s.params_b = ((llm.params_b * 1e9 - tables) * share + llm.embedding_params()) / 1e9;
  s.tied_embeddings = true;
  s.name = llm.name + " (stage of " + std::to_string(pp) + ")";
  return s;
}

const std::vector<LlmSpec>& llm_catalog() {
  static const std::vector<LlmSpec> kCatalog = make_catalog();
  return kCatalog;
}

std::vector<std::string> model_names() { return entry_names(llm_catalog()); }

namespace {

// A Hugging Face repository id ("Qwen/Qwen3-32B-FP8") names the catalog entry of its repository
// name; the error still quotes the name as written.
std::string without_org(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? name : name.substr(slash + 1);
}

}  // namespace

const LlmSpec& find_model(const std::string& name) { return find_model({}, name); }

const LlmSpec& find_model(const std::vector<LlmSpec>& extra, const std::string& name) {
  try {
    return find_entry_in(extra, llm_catalog(), "model", name);
  } catch (const UnknownNameError&) {
    const std::string repo = without_org(name);
    if (repo == name || repo.empty()) throw;
    for (const auto* table : {&extra, &llm_catalog()}) {
      for (const auto& e : *table) {
        if (e.name == repo) return e;
      }
    }
    throw;
  }
}

}  // namespace fleetsim
