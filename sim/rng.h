// Seeded random streams, one per named component. Each stream's seed is a hash of the scenario
// seed and the stream's name, so adding a component never shifts another component's draws.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>

namespace fleetsim {

using Rng = std::mt19937_64;

std::uint64_t stream_seed(std::uint64_t scenario_seed, std::string_view name);

inline Rng make_rng(std::uint64_t scenario_seed, std::string_view name) {
  return Rng(stream_seed(scenario_seed, name));
}

}  // namespace fleetsim
