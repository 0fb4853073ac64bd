// A scenario as `fleetsim run` reads it: the YAML text with its --set overrides (carried in the
// input as "#--set PATH=VALUE" comment lines), then the deployment every pool comes to (catalogs,
// vLLM's memory rules, calibration files). The simulation itself is not run: one input would
// cost seconds, and the bench/ and golden tests run it.
#include "fuzz/fuzz_input.h"
#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fleetsim::fuzz::as_text(data, size);
  const std::vector<std::string> sets = fleetsim::fuzz::prefixed_lines(text, "#--set ");
  fleetsim::fuzz::user_errors_only([&] {
    const fleetsim::Scenario s = fleetsim::parse_scenario(std::string(text), "fuzz.yaml", sets);
    (void)fleetsim::fleet_facts(s);
  });
  return 0;
}
