#include "sim/csv.h"

#include <gtest/gtest.h>

namespace fleetsim {
namespace {

TEST(CsvField, APlainFieldStaysAsItIs) { EXPECT_EQ(csv_field("epp-3.rr_x"), "epp-3.rr_x"); }

TEST(CsvField, CommasQuotesAndLineBreaksAreQuotedWithQuotesDoubled) {
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
}

TEST(CsvField, AlwaysQuotesWhenAsked) { EXPECT_EQ(csv_field("x", true), "\"x\""); }

}  // namespace
}  // namespace fleetsim
