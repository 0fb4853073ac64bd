// The drafter of speculative decoding (vLLM --speculative-config). EAGLE and MTP drafters are a
// head of one decoder layer over the target's hidden states, with an lm_head, run once per draft
// position after each step, batched over the decoding requests; n-gram drafting looks the
// prompt up on the CPU and costs the GPU nothing. The verification of the drafts is the target's
// own step (a decode of 1 + k tokens), priced by its cost model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpu_catalog.h"
#include "models/llm_catalog.h"
#include "sim/time.h"

namespace fleetsim {

enum class SpecMethod { kNone, kNgram, kEagle, kMtp };

// The names a scenario uses (none, ngram, eagle, mtp), in enum order.
const std::vector<std::string>& spec_method_names();
SpecMethod spec_method_from(const std::string& name);

class DraftCost {
 public:
  DraftCost() = default;
  // A head of one of `llm`'s decoder layers and a full-vocabulary lm_head, in BF16, split over
  // `tp` GPUs, at the roofline's efficiencies.
  DraftCost(SpecMethod method, const GpuSpec& gpu, const LlmSpec& llm, std::int32_t tp,
            double compute_efficiency, double bandwidth_efficiency);

  // GPU time of drafting `positions` tokens for each of `seqs` requests holding
  // `context_tokens` tokens in all: `positions` forwards of the head, one after another (each
  // needs the previous one's token), over `seqs` tokens, each reading the head's own one layer
  // of KV for the whole context.
  TimeNs time(std::int32_t seqs, std::int64_t context_tokens, std::int32_t positions) const;

 private:
  double bytes_ = 0;               // weights a forward streams, per GPU
  double kv_bytes_per_token_ = 0;  // the head\'s one layer of BF16 KV, per GPU
  double flops_per_token_ = 0;
  double peak_flops_ = 0;  // compute_efficiency x BF16 peak
  double bandwidth_ = 0;   // bandwidth_efficiency x DRAM bandwidth, bytes/s
};

}  // namespace fleetsim
