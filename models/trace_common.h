// What every trace reader shares: finding the file, reading it line by line with errors that name
// the file, line and field (or skipping bad lines and counting them), JSON field accessors, and
// the replay options (time scale, window, cap, loop) applied to whatever a reader produced.
//
// Readers are pure parsing: they turn a file into Requests whose `arrival` is the offset from the
// trace's time 0. The workloads in sim/fleet/workloads/ put them on the clock.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/request.h"

namespace fleetsim {

struct TraceReadOptions {
  // Skip lines that cannot be read (and count them) instead of failing on the first one.
  bool skip_bad_lines = false;
  // Keep only requests whose offset is in [window_start, window_end) (window_end 0 = no end),
  // and stop reading at the first line past the window or once max_in_window (0 = no cap) are
  // kept, so a week-long trace replayed for an hour costs the memory and time of that hour.
  // Readers reject timestamps that go back, so no later line could fall in the window; lines
  // past it are not read, hence not checked either.
  TimeNs window_start = 0;
  TimeNs window_end = 0;
  std::int64_t max_in_window = 0;
};

// A trace as read from a file.
struct Trace {
  std::string path;  // the file actually read
  // In file order. arrival = the timestamp as an offset from the trace's time 0 (Mooncake and
  // fleetsim JSONL timestamps already are offsets; datetimes count from the first request).
  std::vector<Request> requests;
  std::int64_t lines_read = 0;  // non-blank lines, good and bad
  std::int64_t skipped_lines = 0;
  std::string first_skipped;  // message of the first skipped line ("" when none)
  // Good lines the options left out: before the read window, the first past it (where reading
  // stopped), or filtered by the reader.
  std::int64_t left_out = 0;
  bool done = false;  // the window is complete: the line reader stops
};

// What every reader does with a request it parsed: keeps it when it falls in the options' read
// window, and marks the trace done once no later line can.
void keep_in_window(Trace& trace, const TraceReadOptions& options, Request r);
// What a reader does with a good line it does not keep (outside the window, or filtered out):
// counts it, and marks the trace done when the line is past the window's end.
void leave_out(Trace& trace, const TraceReadOptions& options, TimeNs arrival);

// A problem with one field of one line; the line reader adds the file and line number.
class TraceLineError : public std::runtime_error {
 public:
  TraceLineError(std::string field, const std::string& what)
      : std::runtime_error(what), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// The file a relative path names: as given (relative to the current directory) when it exists,
// else under the data folder (data_folder()). Throws TraceError naming the path and where it
// looked. A scenario resolves its paths when loaded (input_file_path); this serves the rest.
std::string resolve_data_path(const std::string& path);

// Calls `parse(line_number, text)` for every non-blank line of `path` (line numbers from 1;
// `text` without the line break). A TraceLineError from `parse` becomes a TraceError
// "path:line: field: message" or, with skip_bad_lines, a skipped line counted in `trace`. A
// last line with no line break that fails is reported as truncated. An empty file, or one whose
// every line was bad, is an error either way.
void read_trace_lines(const std::string& path, const TraceReadOptions& options, Trace& trace,
                      const std::function<void(std::int64_t, std::string_view)>& parse);

// CSV traces: the cells of one line (split at commas, spaces and double quotes around a cell
// trimmed; the public traces quote nothing else), a column's position in the header by name
// (else a TraceError "path:line: name: missing column in the header (expected ...; found ...)"),
// and a token count in [min_value, kMaxTokens] (else TraceLineError naming `field`).
std::vector<std::string_view> split_csv_line(std::string_view line);
std::size_t csv_column(const std::vector<std::string_view>& header, const std::string& name,
                       const std::vector<std::string>& expected, const std::string& path,
                       std::int64_t line_no);
std::int64_t parse_csv_count(std::string_view cell, const std::string& field,
                             std::int64_t min_value);
// A row of another width than the header's is a TraceLineError naming the first column the
// reader uses that the row lacks (a truncated line), else the row as a whole ("<csv>").
void check_csv_width(const std::vector<std::string_view>& cells, std::size_t num_cols,
                     std::initializer_list<std::pair<std::size_t, const char*>> used);

// JSON accessors for one line's object: each throws TraceLineError naming the field.
nlohmann::json parse_json_line(std::string_view text);
const nlohmann::json& json_field(const nlohmann::json& obj, const char* field);
bool json_has(const nlohmann::json& obj, const char* field);
double json_number(const nlohmann::json& obj, const char* field, double min_value);
std::int64_t json_int(const nlohmann::json& obj, const char* field, std::int64_t min_value);
// A timestamp in ms from the trace's start, in [0, kMaxTraceTimestampMs].
double json_timestamp_ms(const nlohmann::json& obj, const char* field);
// A token count in [min_value, kMaxTokens] (10M, beyond every public model's context window),
// as the workloads' own token counts are.
std::int64_t json_tokens(const nlohmann::json& obj, const char* field, std::int64_t min_value);
std::uint64_t json_uint64(const nlohmann::json& v, const std::string& field);
std::string json_string(const nlohmann::json& obj, const char* field);

// The latest timestamp a trace may hold: ~31.7 years, where the simulated clock stays exact.
inline constexpr double kMaxTraceTimestampMs = 1e12;

// Rejects a timestamp earlier than the previous good line's: replaying out of order would
// reorder turns of a conversation.
void check_monotonic(double timestamp_ms, double& previous_ms, const char* field);

// Replay options shared by every trace reader.
struct ReplayOptions {
  double time_scale = 1.0;        // arrival = (offset - start) x time_scale; 0.5 = twice as fast
  double start_s = 0;             // window on the trace's own offsets, [start_s, end_s)
  double end_s = 0;               // 0 = to the end
  std::int64_t max_requests = 0;  // 0 = all (after the window and the loop)
  std::int32_t loop = 1;          // play the window this many times back to back
  // Later copies of a looped trace get fresh content ids (new users with the same shapes), so a
  // loop adds load without turning the second pass into cache hits. True repeats the content.
  bool loop_same_content = false;
};

// Applies window, time scale, loop and cap, in that order. Time 0 of the result is start_s of
// the trace; copy k of a loop starts one mean inter-arrival gap after copy k-1's last request.
// Request order is kept.
std::vector<Request> apply_replay(const std::vector<Request>& requests,
                                  const ReplayOptions& options);

// Content ids by kind, so no two readers (or generators) share content by accident.
inline constexpr std::uint64_t kMooncakeBlockContent = 0x6d6f6f6e63616b65ULL;  // "mooncake"
inline constexpr std::uint64_t kTracePromptContent = 0x7472616365707274ULL;    // "traceprt"
inline constexpr std::uint64_t kTraceOutputContent = 0x74726163656f7574ULL;    // "traceout"
inline constexpr std::uint64_t kChatMessageContent = 0x636861746d736721ULL;    // "chatmsg!"

}  // namespace fleetsim
