// Simulated time: an integer count of nanoseconds, so event order never depends on rounding.
#pragma once

#include <cmath>
#include <cstdint>

namespace fleetsim {

using TimeNs = std::int64_t;

inline constexpr TimeNs kNsPerUs = 1'000;
inline constexpr TimeNs kNsPerMs = 1'000'000;
inline constexpr TimeNs kNsPerSec = 1'000'000'000;

inline TimeNs ms_to_ns(double ms) { return static_cast<TimeNs>(std::llround(ms * 1e6)); }
inline TimeNs sec_to_ns(double s) { return static_cast<TimeNs>(std::llround(s * 1e9)); }
inline double ns_to_ms(TimeNs t) { return static_cast<double>(t) / 1e6; }
inline double ns_to_sec(TimeNs t) { return static_cast<double>(t) / 1e9; }

}  // namespace fleetsim
