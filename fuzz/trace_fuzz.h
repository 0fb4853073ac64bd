// A trace reader on the input as a trace file: first failing at the first bad line, then
// skipping bad lines. Each reader has its target (NAME_trace_fuzz.cc), so each keeps a corpus of
// its own format.
#pragma once

#include "fuzz/fuzz_input.h"
#include "models/trace_common.h"

namespace fleetsim::fuzz {

template <typename Options>
int read_trace_both_ways(const std::uint8_t* data, std::size_t size, const std::string& suffix,
                         Trace (*reader)(const std::string&, const Options&)) {
  const InputFile file(as_text(data, size), suffix);
  Options options;
  user_errors_only([&] { (void)reader(file.path(), options); });
  options.skip_bad_lines = true;
  user_errors_only([&] { (void)reader(file.path(), options); });
  return 0;
}

}  // namespace fleetsim::fuzz
