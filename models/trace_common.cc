#include "models/trace_common.h"

#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/input_files.h"

namespace fleetsim {

std::string resolve_data_path(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw TraceError("trace file: no path given (set the workload's 'file')");
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  const std::string data = data_folder();
  if (!fs::path(path).is_absolute() && !data.empty()) {
    const fs::path p = fs::path(data) / path;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  throw TraceError(path + ": cannot open the trace file (looked in the current directory " +
                   fs::current_path(ec).string() +
                   (data.empty() ? std::string("; no data folder: FLEETSIM_DATA_DIR is not set")
                                 : " and the data folder " + data) +
                   ")");
}

void read_trace_lines(const std::string& path, const TraceReadOptions& options, Trace& trace,
                      const std::function<void(std::int64_t, std::string_view)>& parse) {
  // Traces may be long (a week of requests): no limit on the file's size, only on a line's.
  if (auto problem = input_file_problem(path, SIZE_MAX)) throw TraceError(path + ": " + *problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open the trace file");
  trace.path = path;
  std::string line;
  std::int64_t line_no = 0;
  bool too_long = false;
  while (getline_bounded(in, line, kMaxTraceLineBytes, too_long)) {
    ++line_no;
    if (too_long) {
      throw TraceError(path + ":" + std::to_string(line_no) + ": a line longer than " +
                       std::to_string(kMaxTraceLineBytes >> 20) +
                       " MiB; expected one request a line");
    }
    // getline stops at end of file without a line break only on the last line.
    const bool unterminated = in.eof();
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    ++trace.lines_read;
    try {
      parse(line_no, line);
      if (trace.done) break;
    } catch (const TraceLineError& e) {
      std::string msg = path + ":" + std::to_string(line_no) + ": " + e.field() + ": " + e.what();
      if (unterminated) msg += " (truncated last line: no line break at the end of the file)";
      if (!options.skip_bad_lines) throw TraceError(msg);
      if (trace.skipped_lines++ == 0) trace.first_skipped = msg;
    }
  }
  if (trace.lines_read == 0) throw TraceError(path + ": empty trace: no requests");
  // Good lines all left out (a window past them, a filter) are the replay's error to report.
  if (trace.requests.empty() && trace.left_out == 0) {
    throw TraceError(path + ": no valid requests; all " + std::to_string(trace.skipped_lines) +
                     " lines were bad, the first: " + trace.first_skipped);
  }
}

void leave_out(Trace& trace, const TraceReadOptions& options, TimeNs arrival) {
  ++trace.left_out;
  if (options.window_end > 0 && arrival >= options.window_end) trace.done = true;
}

void keep_in_window(Trace& trace, const TraceReadOptions& options, Request r) {
  if (r.arrival < options.window_start ||
      (options.window_end > 0 && r.arrival >= options.window_end)) {
    leave_out(trace, options, r.arrival);
    return;
  }
  trace.requests.push_back(std::move(r));
  const auto kept = static_cast<std::int64_t>(trace.requests.size());
  if (options.max_in_window > 0 && kept >= options.max_in_window) trace.done = true;
}

std::vector<std::string_view> split_csv_line(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    std::string_view cell =
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!cell.empty() && (cell.front() == ' ' || cell.front() == '"')) cell.remove_prefix(1);
    while (!cell.empty() && (cell.back() == ' ' || cell.back() == '"')) cell.remove_suffix(1);
    out.push_back(cell);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::size_t csv_column(const std::vector<std::string_view>& header, const std::string& name,
                       const std::vector<std::string>& expected, const std::string& path,
                       std::int64_t line_no) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it != header.end()) return static_cast<std::size_t>(it - header.begin());
  std::string want, found;
  for (const auto& e : expected) want += (want.empty() ? "" : ", ") + e;
  for (auto c : header) found += (found.empty() ? "" : ", ") + std::string(c);
  throw TraceError(path + ":" + std::to_string(line_no) + ": " + name +
                   ": missing column in the header (expected " + want + "; found " + found + ")");
}

void check_csv_width(const std::vector<std::string_view>& cells, std::size_t num_cols,
                     std::initializer_list<std::pair<std::size_t, const char*>> used) {
  if (cells.size() == num_cols) return;
  const std::pair<std::size_t, const char*>* lacking = nullptr;
  for (const auto& column : used) {
    if (column.first >= cells.size() && (lacking == nullptr || column.first < lacking->first)) {
      lacking = &column;
    }
  }
  throw TraceLineError(
      lacking != nullptr ? lacking->second : "<csv>",
      "expected " + std::to_string(num_cols) + " columns, got " + std::to_string(cells.size()));
}

std::int64_t parse_csv_count(std::string_view cell, const std::string& field,
                             std::int64_t min_value) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
  if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size()) {
    throw TraceLineError(field, "expected an integer, got '" + std::string(cell) + "'");
  }
  if (v < min_value || v > static_cast<std::int64_t>(kMaxTokens)) {
    throw TraceLineError(field, "expected an integer in [" + std::to_string(min_value) + ", " +
                                    std::to_string(static_cast<std::int64_t>(kMaxTokens)) +
                                    "], got " + std::to_string(v));
  }
  return v;
}

nlohmann::json parse_json_line(std::string_view text) {
  using Event = nlohmann::json::parse_event_t;
  // The keys of each object being parsed, innermost last: nlohmann keeps the last of a key given
  // twice without a word, so the parse watches for one.
  std::vector<std::vector<std::string>> keys;
  std::string twice;
  const auto watch = [&](int, Event event, nlohmann::json& parsed) {
    if (event == Event::object_start) keys.emplace_back();
    if (event == Event::object_end) keys.pop_back();
    if (event == Event::key && twice.empty()) {
      const std::string key = parsed.get<std::string>();
      std::vector<std::string>& seen = keys.back();
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) twice = key;
      seen.push_back(key);
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text.begin(), text.end(), watch);
  } catch (const nlohmann::json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e400).
    throw TraceLineError("<json>", std::string("invalid JSON: ") + e.what());
  }
  if (!twice.empty()) throw TraceLineError(twice, "given twice in one JSON object");
  if (!j.is_object()) throw TraceLineError("<json>", "expected a JSON object per line");
  return j;
}

bool json_has(const nlohmann::json& obj, const char* field) {
  const auto it = obj.find(field);
  return it != obj.end() && !it->is_null();
}

const nlohmann::json& json_field(const nlohmann::json& obj, const char* field) {
  const auto it = obj.find(field);
  if (it == obj.end() || it->is_null()) throw TraceLineError(field, "missing field");
  return *it;
}

namespace {
std::string type_of(const nlohmann::json& v) {
  return v.is_string() ? "a string '" + v.get<std::string>() + "'" : std::string(v.type_name());
}
}  // namespace

double json_number(const nlohmann::json& obj, const char* field, double min_value) {
  const nlohmann::json& v = json_field(obj, field);
  if (!v.is_number()) throw TraceLineError(field, "expected a number, got " + type_of(v));
  const double x = v.get<double>();
  if (!std::isfinite(x) || x < min_value) {
    std::ostringstream os;
    os << "expected a number >= " << min_value << ", got " << v.dump();
    throw TraceLineError(field, os.str());
  }
  return x;
}

std::int64_t json_int(const nlohmann::json& obj, const char* field, std::int64_t min_value) {
  const nlohmann::json& v = json_field(obj, field);
  if (!v.is_number_integer()) {
    throw TraceLineError(field, "expected an integer, got " + type_of(v));
  }
  if (v.is_number_unsigned() &&
      v.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max())) {
    throw TraceLineError(field, "integer too large: " + v.dump());
  }
  const auto x = v.get<std::int64_t>();
  if (x < min_value || x > std::numeric_limits<std::int32_t>::max()) {
    throw TraceLineError(
        field, "expected an integer >= " + std::to_string(min_value) + ", got " + v.dump());
  }
  return x;
}

double json_timestamp_ms(const nlohmann::json& obj, const char* field) {
  const double x = json_number(obj, field, 0);
  if (x > kMaxTraceTimestampMs) {
    throw TraceLineError(field,
                         "expected ms from the trace's start in [0, 1e12] (~31.7 years), "
                         "got " +
                             obj[field].dump());
  }
  return x;
}

std::int64_t json_tokens(const nlohmann::json& obj, const char* field, std::int64_t min_value) {
  const std::int64_t x = json_int(obj, field, min_value);
  if (x > static_cast<std::int64_t>(kMaxTokens)) {
    throw TraceLineError(field, "expected a token count in [" + std::to_string(min_value) + ", " +
                                    std::to_string(static_cast<std::int64_t>(kMaxTokens)) +
                                    "], got " + std::to_string(x));
  }
  return x;
}

std::uint64_t json_uint64(const nlohmann::json& v, const std::string& field) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0) {
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  }
  if (v.is_string()) {
    // 64-bit ids may be written as strings for tools whose JSON numbers are doubles (jq, JS).
    const std::string s = v.get<std::string>();
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const std::string digits = hex ? s.substr(2) : s;
    const bool valid = !digits.empty() && std::all_of(digits.begin(), digits.end(), [&](char c) {
      return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                 : std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (valid && digits.size() <= (hex ? 16u : 20u)) {
      errno = 0;
      const unsigned long long x = std::strtoull(digits.c_str(), nullptr, hex ? 16 : 10);
      if (errno == 0) return x;
    }
  }
  throw TraceLineError(field,
                       "expected an unsigned 64-bit id (a number or a decimal/0x string), "
                       "got " +
                           v.dump());
}

std::string json_string(const nlohmann::json& obj, const char* field) {
  const nlohmann::json& v = json_field(obj, field);
  if (!v.is_string()) throw TraceLineError(field, "expected a string, got " + type_of(v));
  return v.get<std::string>();
}

void check_monotonic(double timestamp_ms, double& previous_ms, const char* field) {
  if (timestamp_ms < previous_ms) {
    std::ostringstream os;
    os << "timestamps must not go back: " << timestamp_ms << " ms after " << previous_ms
       << " ms on an earlier line";
    throw TraceLineError(field, os.str());
  }
  previous_ms = timestamp_ms;
}

namespace {

std::uint64_t salted(std::uint64_t id, std::uint64_t copy) {
  const std::uint64_t key[2] = {id, copy};
  return XXH3_64bits(key, sizeof key);
}

}  // namespace

std::vector<Request> apply_replay(const std::vector<Request>& requests,
                                  const ReplayOptions& options) {
  if (!(options.time_scale > 0)) throw InternalError("replay time_scale must be positive");
  const TimeNs start = sec_to_ns(options.start_s);
  const TimeNs end = options.end_s > 0 ? sec_to_ns(options.end_s) : INT64_MAX;
  std::vector<Request> window;
  std::int64_t max_conversation = -1;
  for (const Request& r : requests) {
    if (r.arrival < start || r.arrival >= end) continue;
    Request c = r;
    c.arrival = static_cast<TimeNs>(
        std::llround(static_cast<double>(r.arrival - start) * options.time_scale));
    max_conversation = std::max(max_conversation, c.conversation);
    window.push_back(std::move(c));
  }
  std::vector<Request> out;
  if (window.empty()) return out;
  const auto n = static_cast<TimeNs>(window.size());
  const TimeNs first = window.front().arrival;
  const TimeNs last = window.back().arrival;
  // One mean inter-arrival gap between copies, so a copy does not land on its predecessor's
  // last request; a single request repeats once a second.
  const TimeNs gap = n > 1 ? std::max<TimeNs>(1, (last - first) / (n - 1)) : kNsPerSec;
  const TimeNs period = last + gap;
  const std::int64_t cap = options.max_requests > 0 ? options.max_requests : INT64_MAX;
  for (std::int32_t copy = 0; copy < std::max(1, options.loop); ++copy) {
    for (const Request& r : window) {
      if (static_cast<std::int64_t>(out.size()) >= cap) return out;
      Request c = r;
      c.arrival = r.arrival + period * copy;
      if (copy > 0 && !options.loop_same_content) {
        const auto k = static_cast<std::uint64_t>(copy);
        for (Segment& s : c.prompt) s.content_id = salted(s.content_id, k);
        c.output_content_id = salted(c.output_content_id, k);
        if (c.conversation >= 0) c.conversation += (max_conversation + 1) * copy;
        if (!c.session.empty()) c.session += "#" + std::to_string(copy);
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

}  // namespace fleetsim
