#include "models/spec_decode.h"

#include <algorithm>

#include "sim/named.h"

namespace fleetsim {

namespace {

// Fixed cost of each draft forward besides its weights: attention metadata rebuilt for the new
// position, the argmax over the vocabulary, kernel launches. vllm-project/vllm#20780 (EAGLE-3 on
// Llama-3.1-8B-Instruct, batch 1, TPOT 7.07 ms without drafts, i.e. an H100-class GPU) gives
// steps of 10.2, 11.4, 12.5, 13.7, 14.5 and 15.2 ms with 2 to 7 draft tokens (TPOT x mean
// acceptance length): about 1.0 ms a draft position at the margin, where the head's weights
// take 0.54 ms on an H100 at the roofline's bandwidth efficiency (0.82); 0.45 ms is the rest.
constexpr double kDraftForwardOverheadMs = 0.45;

}  // namespace

const std::vector<std::string>& spec_method_names() {
  static const std::vector<std::string> kNames = {"none", "ngram", "eagle", "mtp"};
  return kNames;
}

SpecMethod spec_method_from(const std::string& name) {
  const auto& names = spec_method_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw UnknownNameError("speculative method", name, names);
  return static_cast<SpecMethod>(it - names.begin());
}

DraftCost::DraftCost(SpecMethod method, const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
                     double compute_efficiency, double bandwidth_efficiency) {
  if (method != SpecMethod::kEagle && method != SpecMethod::kMtp) return;
  // One decoder layer (the dense MLP, or the experts a token picks) and the lm_head.
  const double params = llm.active_params() / llm.layers + llm.embedding_params();
  const double parts = std::max<std::int32_t>(tp, 1);
  bytes_ = 2.0 * params / parts;
  kv_bytes_per_token_ = static_cast<double>(llm.kv_bytes_per_token_layer(2, tp));
  flops_per_token_ = 2.0 * params / parts;
  peak_flops_ = compute_efficiency * gpu.bf16_tflops * 1e12;
  bandwidth_ = bandwidth_efficiency * gpu.memory_bandwidth_gbs * 1e9;
}

TimeNs DraftCost::time(std::int32_t seqs, std::int64_t context_tokens,
                       std::int32_t positions) const {
  if (bytes_ <= 0 || seqs <= 0 || positions <= 0) return 0;
  const double bytes = bytes_ + kv_bytes_per_token_ * static_cast<double>(context_tokens);
  const double forward_s = std::max(flops_per_token_ * seqs / peak_flops_, bytes / bandwidth_) +
                           kDraftForwardOverheadMs * 1e-3;
  return static_cast<TimeNs>(forward_s * positions * 1e9);
}

}  // namespace fleetsim
