// `fleetsim campaign`: the five-phase benchmark campaign of a scenario (docs/campaign.md).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace fleetsim::cli {

struct CampaignCommand {
  CLI::App* app = nullptr;
  std::string scenario;
  std::string format = "table";
  std::string out_dir;
  std::vector<std::string> sets;
  int replicates = 0;  // 0: the scenario's campaign.replicates
  int threads = 0;
  bool strict = false;
};

void add_campaign_command(CLI::App& app, CampaignCommand& c);
int run_campaign_command(const CampaignCommand& c);

}  // namespace fleetsim::cli
