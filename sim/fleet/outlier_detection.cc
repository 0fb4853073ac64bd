#include "sim/fleet/outlier_detection.h"

#include <algorithm>

namespace fleetsim {

OutlierDetection::OutlierDetection(const OutlierConfig& config, std::vector<std::int32_t> pools)
    : config_(config), pools_(std::move(pools)), pods_(pools_.size()) {}

bool OutlierDetection::may_eject(int pod) const {
  const std::int32_t pool = pools_[static_cast<size_t>(pod)];
  int size = 0, out = 0;
  for (size_t i = 0; i < pods_.size(); ++i) {
    if (pools_[i] != pool) continue;
    ++size;
    out += pods_[i].ejected ? 1 : 0;
  }
  // Envoy ejects the first pod whatever the percentage says.
  return out == 0 || 100.0 * (out + 1) <= config_.max_ejection_percent * size;
}

bool OutlierDetection::on_answer(int pod, bool error, TimeNs now) {
  PodRecord& p = pods_[static_cast<size_t>(pod)];
  if (!error) {
    p.errors = 0;
    return false;
  }
  if (p.ejected || ++p.errors < config_.consecutive_errors || !may_eject(pod)) return false;
  p.errors = 0;
  p.ejected = true;
  ++p.multiplier;
  p.until = now + std::min(config_.base_ejection * p.multiplier,
                           std::max(config_.max_ejection, config_.base_ejection));
  ++ejections_;
  return true;
}

std::vector<int> OutlierDetection::sweep(TimeNs now) {
  std::vector<int> returned;
  for (size_t i = 0; i < pods_.size(); ++i) {
    PodRecord& p = pods_[i];
    if (!p.ejected) {
      p.multiplier = std::max(0, p.multiplier - 1);
    } else if (now >= p.until) {
      p.ejected = false;
      returned.push_back(static_cast<int>(i));
    }
  }
  return returned;
}

bool OutlierDetection::on_probe_ok(int pod) {
  PodRecord& p = pods_[static_cast<size_t>(pod)];
  if (!p.ejected) return false;
  p.ejected = false;
  p.errors = 0;
  return true;
}

}  // namespace fleetsim
