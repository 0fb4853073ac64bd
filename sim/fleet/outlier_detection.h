// Passive health checking as Envoy's outlier detection runs it (envoy/config/cluster/v3/
// outlier_detection.proto; the architecture overview's "Outlier detection"), the consecutive
// errors kind: a pod whose answers fail `consecutive_errors` times in a row (5xx, and the local
// errors Envoy maps to 5xx when it does not split them: a refused or reset connection, a
// timeout) leaves the routing set at once, for base_ejection x the times it has been ejected, at
// most max_ejection. A sweep every `interval` returns the pods whose time is up and lowers the
// multiplier of pods that stayed in. At most max_ejection_percent of a pool is out at once, but
// one pod always may be. A good active probe returns an ejected pod
// (successful_active_health_check_uneject_host, on by default).
//
// It closes a hole probes leave: a pod that refuses connections answers at once, so to the load
// scorers it looks empty and draws traffic until the probes mark it down.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/time.h"

namespace fleetsim {

struct OutlierConfig {
  int consecutive_errors = 0;  // 0: no outlier detection
  TimeNs base_ejection = 0;
  TimeNs max_ejection = 0;
  TimeNs interval = 0;
  double max_ejection_percent = 10;
  bool enabled() const { return consecutive_errors > 0; }
};

class OutlierDetection {
 public:
  // `pools`: each pod's pool, the set max_ejection_percent is a share of.
  OutlierDetection(const OutlierConfig& config, std::vector<std::int32_t> pools);

  // An answer of `pod` at `now`: a success ends its run of errors, an error extends it. True
  // when this answer ejected the pod.
  bool on_answer(int pod, bool error, TimeNs now);
  bool ejected(int pod) const { return pods_[static_cast<size_t>(pod)].ejected; }
  // The interval's sweep: returns the pods whose ejection is over (the pods returned), and
  // lowers the multiplier of each pod that is in.
  std::vector<int> sweep(TimeNs now);
  // A good active probe of `pod`: back in at once. True when it was out.
  bool on_probe_ok(int pod);
  std::int64_t ejections() const { return ejections_; }

 private:
  struct PodRecord {
    int errors = 0;      // consecutive
    int multiplier = 0;  // times ejected, less one per sweep spent in
    bool ejected = false;
    TimeNs until = 0;
  };
  bool may_eject(int pod) const;

  OutlierConfig config_;
  std::vector<std::int32_t> pools_;
  std::vector<PodRecord> pods_;
  std::int64_t ejections_ = 0;
};

}  // namespace fleetsim
