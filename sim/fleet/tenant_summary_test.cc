// Results per tenant: each tenant's measured requests by outcome and its latency percentiles,
// and nothing for a run whose requests carry no tenant.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/fleet/metrics.h"

namespace fleetsim {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

RequestRecord record(const std::string& tenant, Outcome outcome, double ttft_ms, bool done = true,
                     bool measured = true) {
  RequestRecord r;
  r.tenant = tenant;
  r.arrival = 0;
  r.first_token = static_cast<TimeNs>(ttft_ms * 1e6);
  r.finished = r.first_token + 9 * kNsPerMs * 10;  // 10 more tokens, 9 ms apart
  r.output_tokens = 11;
  r.outcome = outcome;
  r.done = done;
  r.measured = measured;
  return r;
}

TEST(TenantSummary, CountsEachTenantsRequestsByOutcomeAndTakesItsPercentiles) {
  const std::vector<RequestRecord> records = {
      record("b", Outcome::kOk, 100),
      record("a", Outcome::kOk, 50),
      record("a", Outcome::kOk, 70),
      record("a", Outcome::kShed429, 0),
      record("b", Outcome::kOk, 0, false),           // unfinished
      record("a", Outcome::kOk, 1e6, true, false)};  // warm-up: left out
  const std::vector<TenantSummary> t = summarize_tenants(records);
  ASSERT_THAT(t,
              ElementsAre(Field(&TenantSummary::tenant, "a"), Field(&TenantSummary::tenant, "b")));
  EXPECT_EQ(t[0].requests, 3);
  EXPECT_EQ(t[0].completed, 2);
  EXPECT_EQ(t[0].failed, 1);
  EXPECT_DOUBLE_EQ(t[0].ttft_ms.p50, 60);
  EXPECT_DOUBLE_EQ(t[0].tpot_ms.p50, 9);
  EXPECT_EQ(t[1].requests, 2);
  EXPECT_EQ(t[1].unfinished, 1);
  EXPECT_DOUBLE_EQ(t[1].ttft_ms.p95, 100);
}

TEST(TenantSummary, NoTenantsNoSummary) {
  EXPECT_THAT(summarize_tenants({record("", Outcome::kOk, 10)}), IsEmpty());
}

}  // namespace
}  // namespace fleetsim
