// The stages of a pipeline-parallel pod on the clock. vLLM V1 keeps up to pp steps
// (microbatches) under way at once (its batch queue): the host prepares each in turn, the first
// stage's GPUs run their layers on it, hand its activations to the next stage, and so on, every
// stage working on one microbatch at a time in the order they came. A microbatch's tokens are
// out when the last stage is done with it.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/time.h"

namespace fleetsim {

class PipelineStages {
 public:
  explicit PipelineStages(std::int32_t stages);
  // A microbatch handed over at `now`: `host` of host work (one microbatch at a time), then
  // `stage` on each stage once it is free, `send` between two stages. Returns when the last
  // stage is done with it.
  TimeNs admit(TimeNs now, TimeNs host, TimeNs stage, TimeNs send);
  // Forget what was under way (the process died).
  void reset();

 private:
  TimeNs host_free_ = 0;
  std::vector<TimeNs> stage_free_;  // when each stage is done with what it was given
};

}  // namespace fleetsim
