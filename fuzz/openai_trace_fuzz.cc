#include "fuzz/trace_fuzz.h"
#include "models/trace_openai.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return fleetsim::fuzz::read_trace_both_ways(data, size, ".jsonl",
                                              &fleetsim::read_openai_chat_trace);
}
