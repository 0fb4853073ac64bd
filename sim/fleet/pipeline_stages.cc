#include "sim/fleet/pipeline_stages.h"

#include <algorithm>

#include "sim/errors.h"

namespace fleetsim {

PipelineStages::PipelineStages(std::int32_t stages) {
  if (stages < 1) throw InternalError("a pipeline needs a stage, got " + std::to_string(stages));
  stage_free_.assign(static_cast<size_t>(stages), 0);
}

TimeNs PipelineStages::admit(TimeNs now, TimeNs host, TimeNs stage, TimeNs send) {
  host_free_ = std::max(host_free_, now) + host;
  TimeNs ready = host_free_;
  for (size_t k = 0; k < stage_free_.size(); ++k) {
    if (k > 0) ready += send;
    stage_free_[k] = std::max(stage_free_[k], ready) + stage;
    ready = stage_free_[k];
  }
  return ready;
}

void PipelineStages::reset() {
  host_free_ = 0;
  std::fill(stage_free_.begin(), stage_free_.end(), 0);
}

}  // namespace fleetsim
