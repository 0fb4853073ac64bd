#include "sim/fleet/describe.h"

#include <sstream>

#include "models/cost_model.h"
#include "models/engine.h"
#include "policies/policy.h"
#include "sim/errors.h"
#include "sim/fleet/autoscaler.h"
#include "sim/fleet/campaign/campaign.h"
#include "sim/fleet/faults.h"
#include "sim/fleet/gateway.h"
#include "sim/fleet/gpu_defs.h"
#include "sim/fleet/model_defs.h"
#include "sim/fleet/scenario.h"
#include "sim/fleet/slo.h"
#include "sim/fleet/workload.h"

namespace fleetsim {

const std::vector<SectionSpec>& section_specs() {
  static const std::vector<SectionSpec> kSections = {
      {"server", "fleet.server (or a pool's server): the model server's settings, as vLLM's",
       &server_spec()},
      {"cost_model",
       "fleet.cost_model (or a pool's cost_model): the prefill/decode cost model's constants "
       "(docs/calibration.md)",
       &cost_model_spec()},
      {"gateway",
       "gateway: the gateway in front of the pods (timeouts, health probes, Endpoint Picker "
       "service, replicas, P/D); scenario-wide, overridable per arm",
       &gateway_spec()},
      {"client", "client: what a client does after a failed attempt", &client_spec()},
      {"slo",
       "slo: the targets behind goodput@SLO; a request is good when it completed within every "
       "target of its SLO class (also under classes: {NAME: {...}}, where a class inherits "
       "what it does not set)",
       &slo_targets_spec()},
      {"autoscaling",
       "autoscaling: a Kubernetes HPA over the fleet's pods (docs/autoscaling.md); "
       "scenario-wide, overridable per arm",
       &autoscaling_spec()},
      {"campaign", "campaign: settings of `fleetsim campaign` (docs/campaign.md)",
       &campaign_spec()},
      {"model",
       "fleet.models: your own models, each a map of these config.json fields, named by "
       "fleet.model or a pool's model like a catalog entry (fleetsim list models)",
       &model_def_spec()},
      {"gpu",
       "fleet.gpus: your own GPUs, each a map of these datasheet figures, named by fleet.gpu or "
       "a pool's gpu like a catalog entry (fleetsim list gpus)",
       &gpu_def_spec()},
      {"layout",
       "fleet (or a pool): how pods sit on GPUs and nodes, and how co-located pods share a GPU "
       "(docs/scenarios.md, \"Co-located pods\")",
       &fleet_layout_spec()},
  };
  return kSections;
}

std::vector<std::string> describable_names() {
  std::vector<std::string> names;
  for (const SectionSpec& s : section_specs()) names.push_back(s.name);
  names.push_back("faults");
  for (const auto& [kind, spec] : fault_specs()) names.push_back(kind);
  for (const auto& n : WorkloadRegistry::instance().names()) names.push_back(n);
  for (const auto& n : PolicyRegistry::instance().names()) names.push_back(n);
  return names;
}

const ParamSpec& section_spec(const std::string& name) {
  for (const SectionSpec& s : section_specs()) {
    if (s.name == name) return *s.spec;
  }
  if (const auto fault = fault_specs().find(name); fault != fault_specs().end()) {
    return fault->second;
  }
  std::vector<std::string> valid;
  for (const SectionSpec& s : section_specs()) valid.push_back(s.name);
  for (const auto& [kind, spec] : fault_specs()) valid.push_back(kind);
  throw UnknownNameError("section", name, valid);
}

std::string describe(const std::string& name) {
  std::ostringstream os;
  for (const SectionSpec& s : section_specs()) {
    if (s.name == name) {
      os << s.title << "\nparameters:\n" << s.spec->describe();
      return os.str();
    }
  }
  if (name == "faults") {
    os << "faults: a list of {kind: KIND, ...} scheduled in the run (docs/failures.md); each "
          "kind and its parameters:\n";
    for (const auto& [kind, spec] : fault_specs()) os << "\n" << kind << ":\n" << spec.describe();
    return os.str();
  }
  if (const auto fault = fault_specs().find(name); fault != fault_specs().end()) {
    os << name << ": a fault kind (docs/failures.md)\nparameters:\n" << fault->second.describe();
    return os.str();
  }
  auto show = [&](const auto& entry) {
    os << name << ": " << entry.description << "\nparameters:\n" << entry.spec.describe();
    return os.str();
  };
  if (WorkloadRegistry::instance().contains(name)) {
    return show(WorkloadRegistry::instance().get(name, "workload"));
  }
  if (PolicyRegistry::instance().contains(name)) {
    return show(PolicyRegistry::instance().get(name, "policy"));
  }
  throw UnknownNameError("name", name, describable_names());
}

}  // namespace fleetsim
