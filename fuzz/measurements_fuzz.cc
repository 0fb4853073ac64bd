// A measurements CSV as `fleetsim calibrate` reads it (steps or requests layout).
#include "fuzz/fuzz_input.h"
#include "models/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(fleetsim::fuzz::as_text(data, size));
  fleetsim::fuzz::user_errors_only([&] { (void)fleetsim::parse_measurements(text, "fuzz.csv"); });
  return 0;
}
