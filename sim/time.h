// Simulated time: an integer count of nanoseconds, so event order never depends on rounding.
#pragma once

#include <cmath>
#include <cstdint>

namespace fleetsim {

using TimeNs = std::int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSec = 1'000'000'000;

// The simulated clock stops at ~31.7 years: far beyond any run, and low enough that a time plus
// a delay (both at most this) never overflows int64. The event loop refuses events past it, so
// an absurd duration, rate or slowdown in a scenario is an error, not a wrapped-around clock.
inline constexpr TimeNs kTimeLimit = 1'000'000'000'000'000'000;

// Conversions saturate at +-kTimeLimit (a NaN gives kTimeLimit) instead of overflowing.
inline TimeNs saturated_ns(double ns) {
  if (!(ns < static_cast<double>(kTimeLimit))) return kTimeLimit;
  if (ns <= -static_cast<double>(kTimeLimit)) return -kTimeLimit;
  return static_cast<TimeNs>(std::llround(ns));
}
inline TimeNs ms_to_ns(double ms) { return saturated_ns(ms * 1e6); }
inline TimeNs sec_to_ns(double s) { return saturated_ns(s * 1e9); }
inline TimeNs scale_ns(TimeNs t, double factor) {
  return saturated_ns(static_cast<double>(t) * factor);
}
inline double ns_to_ms(TimeNs t) { return static_cast<double>(t) / 1e6; }
inline double ns_to_sec(TimeNs t) { return static_cast<double>(t) / 1e9; }

}  // namespace fleetsim
