// A validation file as `fleetsim validate` reads and checks it before any scenario runs.
#include "fuzz/fuzz_input.h"
#include "sim/fleet/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fleetsim::fuzz::InputFile file(fleetsim::fuzz::as_text(data, size), ".yaml");
  fleetsim::fuzz::user_errors_only([&] { (void)fleetsim::read_validation_files({file.path()}); });
  return 0;
}
