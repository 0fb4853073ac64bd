// A calibration file (what `fleetsim calibrate --out` writes and cost_model.calibration names).
#include "fuzz/fuzz_input.h"
#include "models/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fleetsim::fuzz::InputFile file(fleetsim::fuzz::as_text(data, size), ".yaml");
  fleetsim::fuzz::user_errors_only([&] { (void)fleetsim::read_calibration_file(file.path()); });
  return 0;
}
