#include "fuzz/trace_fuzz.h"
#include "models/trace_burstgpt.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fleetsim::fuzz::read_trace_both_ways(data, size, ".csv", &fleetsim::read_burstgpt_trace);
}
