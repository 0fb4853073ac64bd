// Results as other tools read them (JSON, CSV) and as people read them (a table with the
// measured figures beside the simulated ones). The JSON names are a stable schema.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace fleetsim {

nlohmann::json summary_json(const ArmSummary& s);
// Whether the run's arms carry goodput@SLO (its scenario has an slo section): the outputs add
// their goodput rows and columns only then, so other results keep their exact bytes.
bool has_goodput(const RunResult& r);
// `v` with `decimals` digits after the point, as every table prints figures.
std::string fixed_text(double v, int decimals);
nlohmann::json result_json(const RunResult& r, const Scenario& s);
void write_table(std::ostream& os, const RunResult& r, const Scenario& s);
void write_summary_csv(std::ostream& os, const RunResult& r);
void write_requests_csv(std::ostream& os, const RunResult& r);

}  // namespace fleetsim
