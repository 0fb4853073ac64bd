#include "sim/fleet/run_size.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>

#include "sim/errors.h"
#include "sim/fleet/metrics.h"

namespace fleetsim {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// What a run keeps of each request to its end: its record and its streaming figures.
constexpr double kBytesPerRequest = sizeof(RequestRecord) + 16;

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

}  // namespace

std::optional<std::string> run_size_warning(const Scenario& s, double expected,
                                            double memory_bytes) {
  const double arms = static_cast<double>(std::max<std::size_t>(1, s.arms.size()));
  const double bytes = expected * arms * kBytesPerRequest;
  if (memory_bytes > 0 && bytes > memory_bytes) {
    throw ScenarioError(fmt::format(
        "{}: workload: about {:.3g} requests an arm ({} arms) need about {:.0f} GiB for their "
        "records, more than this machine's {:.0f} GiB; shorten or slow the workload, or set "
        "sim.horizon_s",
        s.file, expected, s.arms.size(), bytes / kGiB, memory_bytes / kGiB));
  }
  if (expected < kLargeRunRequests) return std::nullopt;
  return fmt::format(
      "{}: workload: about {:.3g} requests an arm ({} arms): about {:.1f} GiB of records and, "
      "at 13k-17k requests per CPU second, about {:.0f} CPU minutes; --progress shows how far "
      "it has come",
      s.file, expected, s.arms.size(), bytes / kGiB, expected * arms / 15e3 / 60.0);
}

void check_run_size(const Scenario& s, std::optional<double> expected) {
  if (!expected) return;
  if (const auto warning = run_size_warning(s, *expected, physical_memory_bytes())) {
    spdlog::warn("{}", *warning);
  }
}

double run_fraction(TimeNs now, double horizon_s, std::int64_t ended,
                    std::optional<double> expected) {
  double fraction = 0;
  if (horizon_s > 0) fraction = ns_to_sec(now) / horizon_s;
  if (expected && *expected > 0) {
    fraction = std::max(fraction, static_cast<double>(ended) / *expected);
  }
  return std::clamp(fraction, 0.0, 1.0);
}

}  // namespace fleetsim
