// fleetsim_scenario_bench: times whole scenario runs (one thread), for the speed targets.
//   fleetsim_scenario_bench SCENARIO [--set PATH=VALUE ...] [--repeat N]
// Prints, per run, wall seconds, requests and events simulated (all arms), requests per second
// of wall time and the process's peak RSS so far.
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "sim/fleet/runner.h"
#include "sim/fleet/scenario.h"

namespace {

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::vector<std::string> sets;
  int repeat = 3;
  CLI::App app{"Times whole scenario runs (run_scenario on one thread)"};
  app.add_option("scenario", path, "scenario YAML file")->required()->check(CLI::ExistingFile);
  app.add_option("--set", sets, "override a scenario field, PATH=VALUE (repeatable)");
  app.add_option("--repeat", repeat, "number of timed runs")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    const fleetsim::Scenario s = fleetsim::load_scenario(path, sets);
    std::printf("scenario %s: %zu arms, %d pods, seed %llu\n", s.name.c_str(), s.arms.size(),
                s.fleet.pods, static_cast<unsigned long long>(s.seed));
    std::printf("%4s %10s %10s %12s %12s %12s\n", "run", "wall_s", "requests", "events", "req/s",
                "peak_MiB");
    double best = 0;
    for (int i = 1; i <= repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const fleetsim::RunResult r = fleetsim::run_scenario(s, 1);
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::int64_t requests = 0;
      std::uint64_t events = 0;
      for (const auto& a : r.arms) {
        requests += a.summary.requests;
        events += a.events;
      }
      const double rate = wall > 0 ? static_cast<double>(requests) / wall : 0;
      best = (i == 1 || wall < best) ? wall : best;
      std::printf("%4d %10.3f %10lld %12llu %12.0f %12.1f\n", i, wall,
                  static_cast<long long>(requests), static_cast<unsigned long long>(events), rate,
                  peak_rss_mib());
      std::fflush(stdout);
    }
    std::printf("best wall %.3f s\n", best);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleetsim_scenario_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
