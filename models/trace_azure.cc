#include "models/trace_azure.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "models/conversation.h"
#include "sim/errors.h"

namespace fleetsim {
namespace {

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant,
// "chrono-Compatible Low-Level Date Algorithms", days_from_civil).
std::int64_t days_from_civil(std::int64_t y, std::int64_t m, std::int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const std::int64_t yoe = y - era * 400;
  const std::int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::int64_t parse_datetime_ns(std::string_view text) {
  auto fail = [&]() -> std::int64_t {
    throw TraceLineError("TIMESTAMP",
                         "expected a datetime 'YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM]', got '" +
                             std::string(text) + "'");
  };
  auto digits = [&](std::size_t pos, std::size_t n, std::int64_t& out) {
    if (pos + n > text.size()) return false;
    out = 0;
    for (std::size_t i = pos; i < pos + n; ++i) {
      if (text[i] < '0' || text[i] > '9') return false;
      out = out * 10 + (text[i] - '0');
    }
    return true;
  };
  std::int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  if (text.size() < 19 || !digits(0, 4, y) || text[4] != '-' || !digits(5, 2, mo) ||
      text[7] != '-' || !digits(8, 2, d) || (text[10] != ' ' && text[10] != 'T') ||
      !digits(11, 2, h) || text[13] != ':' || !digits(14, 2, mi) || text[16] != ':' ||
      !digits(17, 2, s)) {
    return fail();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return fail();
  std::int64_t frac_ns = 0;
  std::size_t pos = 19;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    std::int64_t scale = 100'000'000;
    const std::size_t first = pos;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9'; ++pos) {
      frac_ns += (text[pos] - '0') * scale;  // digits past the 9th are below a nanosecond
      scale /= 10;
    }
    if (pos == first) return fail();
  }
  // ISO 8601 zone: Z, or an offset from UTC as +HH, +HHMM or +HH:MM (the 2024 Azure traces
  // write "+00:00"). Times are taken to UTC, so a trace whose offset changes (daylight saving)
  // keeps its order.
  std::int64_t offset_min = 0;
  if (pos < text.size() && text[pos] == 'Z') {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const std::int64_t sign = text[pos] == '-' ? -1 : 1;
    std::int64_t oh = 0, om = 0;
    if (!digits(pos + 1, 2, oh)) return fail();
    pos += 3;
    const bool colon = pos < text.size() && text[pos] == ':';
    if (colon) ++pos;
    if (colon || pos < text.size()) {
      if (!digits(pos, 2, om)) return fail();
      pos += 2;
    }
    if (oh > 23 || om > 59) return fail();
    offset_min = sign * (oh * 60 + om);
  }
  if (pos != text.size()) return fail();
  const std::int64_t secs =
      days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s - offset_min * 60;
  // Nanoseconds since 1970 in 64 bits reach from 1677-09-21 to 2262-04-11.
  constexpr std::int64_t kReach = std::numeric_limits<std::int64_t>::max() / kNsPerSec - 1;
  if (secs < -kReach || secs > kReach) {
    throw TraceLineError("TIMESTAMP", "'" + std::string(text) +
                                          "' is too far from 1970 for nanoseconds in 64 bits "
                                          "(about 1678 to 2262)");
  }
  return secs * kNsPerSec + frac_ns;
}

Trace read_azure_trace(const std::string& path, const TraceReadOptions& options) {
  Trace trace;
  std::size_t col_ts = 0, col_ctx = 0, col_gen = 0, num_cols = 0;
  bool have_header = false;
  std::int64_t t0 = 0, previous = INT64_MIN;
  read_trace_lines(path, options, trace, [&](std::int64_t line_no, std::string_view text) {
    const std::vector<std::string_view> cells = split_csv_line(text);
    if (!have_header) {
      // The header is not a request: a bad one is always an error, even when skipping lines.
      const std::vector<std::string> expected = {"TIMESTAMP", "ContextTokens", "GeneratedTokens"};
      col_ts = csv_column(cells, "TIMESTAMP", expected, path, line_no);
      col_ctx = csv_column(cells, "ContextTokens", expected, path, line_no);
      col_gen = csv_column(cells, "GeneratedTokens", expected, path, line_no);
      num_cols = cells.size();
      have_header = true;
      --trace.lines_read;  // not a request line
      return;
    }
    check_csv_width(
        cells, num_cols,
        {{col_ts, "TIMESTAMP"}, {col_ctx, "ContextTokens"}, {col_gen, "GeneratedTokens"}});
    const std::int64_t t = parse_datetime_ns(cells[col_ts]);
    const std::int64_t ctx = parse_csv_count(cells[col_ctx], "ContextTokens", 1);
    const std::int64_t gen = parse_csv_count(cells[col_gen], "GeneratedTokens", 1);
    if (t < previous) {
      throw TraceLineError("TIMESTAMP",
                           "timestamps must not go back: " + std::string(cells[col_ts]) +
                               " is earlier than an earlier line's");
    }
    if (previous == INT64_MIN) t0 = t;  // the first good line, kept in the window or not
    previous = t;
    const auto line = static_cast<std::uint64_t>(line_no);
    Request r;
    r.prompt = {Segment{content_id(kTracePromptContent, line, 0), static_cast<std::int32_t>(ctx)}};
    r.prompt_tokens = static_cast<std::int32_t>(ctx);
    r.output_tokens = static_cast<std::int32_t>(gen);
    r.output_content_id = content_id(kTraceOutputContent, line, 0);
    r.arrival = t - t0;
    keep_in_window(trace, options, std::move(r));
  });
  return trace;
}

}  // namespace fleetsim
