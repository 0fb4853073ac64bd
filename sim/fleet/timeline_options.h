// What part of a run `fleetsim run --timeline` records (sim/fleet/timeline.h).
#pragma once

#include <cstdint>

#include "sim/time.h"

namespace fleetsim {

struct TimelineOptions {
  bool enabled = false;
  TimeNs from = 0;                      // simulated time the window starts at
  TimeNs to = INT64_MAX;                // and ends at
  std::int64_t max_events = 1'000'000;  // trace events kept; later ones are dropped, and said so
};

}  // namespace fleetsim
