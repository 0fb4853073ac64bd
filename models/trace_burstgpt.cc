#include "models/trace_burstgpt.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "models/conversation.h"

namespace fleetsim {
namespace {

// Seconds from the trace's start, as the files write them ("5", "45.25").
double parse_seconds(std::string_view cell) {
  double v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(v) ||
      v < 0 || v > 1e9) {
    throw TraceLineError("Timestamp", "expected seconds from the trace's start in [0, 1e9], got '" +
                                          std::string(cell) + "'");
  }
  return v;
}

}  // namespace

Trace read_burstgpt_trace(const std::string& path, const BurstGptOptions& options) {
  Trace trace;
  const std::vector<std::string> expected = {"Timestamp", "Model", "Request tokens",
                                             "Response tokens", "Log Type"};
  std::size_t col_ts = 0, col_model = 0, col_req = 0, col_resp = 0, col_log = 0, num_cols = 0;
  std::optional<std::size_t> col_session;
  bool have_header = false;
  double previous_ms = 0;
  read_trace_lines(path, options, trace, [&](std::int64_t line_no, std::string_view text) {
    const std::vector<std::string_view> cells = split_csv_line(text);
    if (!have_header) {
      col_ts = csv_column(cells, "Timestamp", expected, path, line_no);
      col_model = csv_column(cells, "Model", expected, path, line_no);
      col_req = csv_column(cells, "Request tokens", expected, path, line_no);
      col_resp = csv_column(cells, "Response tokens", expected, path, line_no);
      col_log = csv_column(cells, "Log Type", expected, path, line_no);
      for (std::size_t i = 0; i < cells.size(); ++i) {
        if (cells[i] == "SessionID") col_session = i;
      }
      num_cols = cells.size();
      have_header = true;
      --trace.lines_read;  // not a request line
      return;
    }
    check_csv_width(cells, num_cols,
                    {{col_ts, "Timestamp"},
                     {col_model, "Model"},
                     {col_req, "Request tokens"},
                     {col_resp, "Response tokens"},
                     {col_log, "Log Type"}});
    const double seconds = parse_seconds(cells[col_ts]);
    const std::int64_t prompt = parse_csv_count(cells[col_req], "Request tokens", 1);
    const std::int64_t output = parse_csv_count(cells[col_resp], "Response tokens", 0);
    if (output == 0 && options.failed_is_error) {
      throw TraceLineError("Response tokens",
                           "0 response tokens: a request that failed (BurstGPT's mark); "
                           "failed_rows: skip leaves such rows out");
    }
    check_monotonic(seconds * 1e3, previous_ms, "Timestamp");
    const TimeNs arrival = sec_to_ns(seconds);
    const bool wanted = output > 0 &&
                        (options.model.empty() || cells[col_model] == options.model) &&
                        (options.log_type.empty() || cells[col_log] == options.log_type);
    if (!wanted) {
      leave_out(trace, options, arrival);
      return;
    }
    const auto line = static_cast<std::uint64_t>(line_no);
    Request r;
    r.prompt = {
        Segment{content_id(kTracePromptContent, line, 0), static_cast<std::int32_t>(prompt)}};
    r.prompt_tokens = static_cast<std::int32_t>(prompt);
    r.output_tokens = static_cast<std::int32_t>(output);
    r.output_content_id = content_id(kTraceOutputContent, line, 0);
    if (col_session && !cells[*col_session].empty()) r.session = std::string(cells[*col_session]);
    r.arrival = arrival;
    keep_in_window(trace, options, std::move(r));
  });
  return trace;
}

}  // namespace fleetsim
