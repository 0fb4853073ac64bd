// fleetsim_scenario_bench: times whole scenario runs (one thread), for the speed targets.
//   fleetsim_scenario_bench SCENARIO [--set PATH=VALUE ...] [--arm NAME ...] [--repeat N]
// Prints, per run, wall and CPU seconds, requests and events simulated (all arms run), requests
// per CPU second and the process's peak RSS so far. CPU time is the figure to compare: on a
// shared machine wall time also counts the other processes' turns.
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <stdexcept>
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

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}

// Keeps only the arms named (all when none is), in the scenario's order.
void keep_arms(fleetsim::Scenario& s, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::vector<fleetsim::ArmSpec> kept;
  for (const auto& arm : s.arms) {
    if (std::find(names.begin(), names.end(), arm.name) != names.end()) kept.push_back(arm);
  }
  if (kept.size() != names.size()) {
    std::string valid;
    for (const auto& arm : s.arms) valid += (valid.empty() ? "" : ", ") + arm.name;
    throw std::runtime_error("--arm: unknown or repeated arm name; valid: " + valid);
  }
  s.arms = std::move(kept);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  std::vector<std::string> sets;
  std::vector<std::string> arms;
  int repeat = 3;
  CLI::App app{"Times whole scenario runs (run_scenario on one thread)"};
  app.add_option("scenario", path, "scenario YAML file")->required()->check(CLI::ExistingFile);
  app.add_option("--set", sets, "override a scenario field, PATH=VALUE (repeatable)");
  app.add_option("--arm", arms, "run only this arm (repeatable; default: every arm)");
  app.add_option("--repeat", repeat, "number of timed runs")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  try {
    fleetsim::Scenario s = fleetsim::load_scenario(path, sets);
    keep_arms(s, arms);
    std::printf("scenario %s: %zu arms, %d pods, seed %llu\n", s.name.c_str(), s.arms.size(),
                s.fleet.pods, static_cast<unsigned long long>(s.seed));
    std::printf("%4s %10s %10s %10s %12s %12s %12s\n", "run", "wall_s", "cpu_s", "requests",
                "events", "req/cpu_s", "peak_MiB");
    double best = 0;
    for (int i = 1; i <= repeat; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const double cpu0 = cpu_seconds();
      const fleetsim::RunResult r = fleetsim::run_scenario(s, 1);
      const double cpu = cpu_seconds() - cpu0;
      const double wall =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::int64_t requests = 0;
      std::uint64_t events = 0;
      for (const auto& a : r.arms) {
        requests += a.summary.requests;
        events += a.events;
      }
      const double rate = cpu > 0 ? static_cast<double>(requests) / cpu : 0;
      best = (i == 1 || cpu < best) ? cpu : best;
      std::printf("%4d %10.3f %10.3f %10lld %12llu %12.0f %12.1f\n", i, wall, cpu,
                  static_cast<long long>(requests), static_cast<unsigned long long>(events), rate,
                  peak_rss_mib());
      std::fflush(stdout);
    }
    std::printf("best cpu %.3f s\n", best);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleetsim_scenario_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
