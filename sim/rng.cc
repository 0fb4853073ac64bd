#include "sim/rng.h"

#include <xxhash.h>

namespace fleetsim {

std::uint64_t stream_seed(std::uint64_t scenario_seed, std::string_view name) {
  return XXH3_64bits_withSeed(name.data(), name.size(), scenario_seed);
}

}  // namespace fleetsim
