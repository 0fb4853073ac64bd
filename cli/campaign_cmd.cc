#include "cli/campaign_cmd.h"

#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>

#include "cli/option_checks.h"
#include "sim/errors.h"
#include "sim/fleet/campaign/campaign.h"
#include "sim/output_files.h"

namespace fleetsim::cli {

void add_campaign_command(CLI::App& app, CampaignCommand& c) {
  c.app = app.add_subcommand(
      "campaign",
      "run a scenario's benchmark campaign: health, one pod's capacity, the routing mechanism, "
      "the A/B over several seeds, intervals and equivalence tests, and a verdict");
  c.app->add_option("scenario", c.scenario, "scenario YAML file (its campaign: section, if any)")
      ->required();
  c.app
      ->add_option("--replicates", c.replicates,
                   "seeds of the A/B phase (default: the scenario's "
                   "campaign.replicates, 5)")
      ->check(integer_in(2, 10000));
  c.app->add_option("--set", c.sets, "override a field for every phase: PATH=VALUE");
  c.app->add_option("--format", c.format, "output format")->check(CLI::IsMember({"table", "json"}));
  c.app->add_option("--out", c.out_dir, "also write campaign.json here");
  c.app->add_option("--threads", c.threads, "threads (0 = all cores); results do not depend on it")
      ->check(threads_check());
  c.app->add_flag("--strict", c.strict, "exit 1 unless the verdict is PUBLISHABLE");
}

int run_campaign_command(const CampaignCommand& c) {
  CampaignOptions o;
  o.overrides = c.sets;
  if (c.replicates > 0) o.replicates = c.replicates;
  o.threads = c.threads;
  const CampaignResult r = run_campaign(c.scenario, o);
  const std::string json = campaign_json(r).dump(2) + "\n";
  if (c.format == "json") {
    std::cout << json;
  } else {
    write_campaign_report(std::cout, r);
  }
  if (!c.out_dir.empty()) {
    const auto file = std::filesystem::path(c.out_dir) / "campaign.json";
    write_output_file(file, json);
    spdlog::info("wrote {}", file.string());
  }
  return c.strict && r.verdict != "PUBLISHABLE" ? 1 : 0;
}

}  // namespace fleetsim::cli
