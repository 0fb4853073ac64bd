// What `fleetsim describe NAME` and fleetsim.describe(NAME) print, from the same specs that
// validate a scenario: its sections (server, cost_model, gateway, client, slo, autoscaling,
// campaign, your own models and GPUs), the fault kinds, the workloads and the policies.
#pragma once

#include <string>
#include <vector>

#include "sim/params.h"

namespace fleetsim {

// A scenario section described by one ParamSpec.
struct SectionSpec {
  std::string name;   // the name `describe` takes
  std::string title;  // where it lives in a scenario and what it is for
  const ParamSpec* spec;
};

const std::vector<SectionSpec>& section_specs();

// The spec of a section (section_specs()) or of a fault kind; UnknownNameError otherwise.
const ParamSpec& section_spec(const std::string& name);

// Every name describe() accepts, sections first.
std::vector<std::string> describable_names();

// A section's, a fault kind's, a workload's or a policy's text: what it is and its parameters
// (name, type, default, range, help). UnknownNameError, listing describable_names(), otherwise.
std::string describe(const std::string& name);

}  // namespace fleetsim
