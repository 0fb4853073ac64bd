// Input files (scenarios, YAML and JSON configs, CSV tables, traces) read with limits: a regular
// file only (a FIFO would block forever, /dev/zero never ends), at most a bounded size, and text
// without NUL or other control bytes, refused with the file's name and what was expected before
// a parser sees them. FLEETSIM_MAX_INPUT_MIB raises the size limit of whole files.
//
// Where a file named inside an input file (a trace, a length distribution, a calibration, a
// model's config.json, a validation check's scenario) is looked for. Like every config tool,
// a relative path resolves against the folder of the file that names it, so a scenario runs the
// same from any directory; then against the data folder (the public traces and profiles). A path
// given with --set resolves against the current directory, where the user typed it.
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <utility>

namespace YAML {
class Node;
}

namespace fleetsim {

// The most a whole input file may hold: FLEETSIM_MAX_INPUT_MIB MiB, 64 MiB when unset.
std::size_t max_input_bytes();
// The longest line a trace may have (a Mooncake line's hash ids run to a few hundred KiB).
inline constexpr std::size_t kMaxTraceLineBytes = 16u << 20;

// Why `path` cannot be read as an input file (not a regular file, over `max_bytes`, gzipped),
// without the path; nullopt when it can, or when it does not exist (the caller's open says so).
std::optional<std::string> input_file_problem(const std::string& path, std::size_t max_bytes);
// Where `text` holds a byte no text file of ours has (NUL, another C0 control but tab, line feed
// and carriage return, or DEL): "N: ..." with N its line; nullopt when it holds none.
std::optional<std::string> control_byte_problem(const std::string& text);
// A gzip file's first bytes, for a message that says to decompress it.
bool looks_gzipped(const std::string& path);

// The file's bytes; nullopt when it cannot be opened.
std::optional<std::string> read_whole_file(const std::string& path);

// The whole file as text, or throws E("PATH: why"); `cannot_open` is the reason given when the
// file is missing or unreadable.
template <class E>
std::string read_input_file(const std::string& path, const std::string& cannot_open) {
  if (auto problem = input_file_problem(path, max_input_bytes())) throw E(path + ": " + *problem);
  std::optional<std::string> text = read_whole_file(path);
  if (!text) throw E(path + ": " + cannot_open);
  if (auto bad = control_byte_problem(*text)) throw E(path + ":" + *bad);
  return std::move(*text);
}

// std::getline that stops at `max` bytes: false at end of input; sets `too_long` (and leaves
// the rest of that line unread) when a line is longer.
bool getline_bounded(std::istream& in, std::string& line, std::size_t max, bool& too_long);

struct YamlWhere;

// $FLEETSIM_DATA_DIR, else the data folder the build was configured with
// (FLEETSIM_SHARED_DIR/data) when it exists; empty when neither.
std::string data_folder();

// The file `value` (the text of `node`, at `where`) names, as a path usable from the current
// directory. Throws ScenarioError naming the field, `what` the file is, every place looked at,
// and `hint`; when the file exists only from the current directory, the error says how to write
// the path relative to the naming file.
std::string input_file_path(const std::string& value, const YamlWhere& where,
                            const YAML::Node& node, const std::string& what,
                            const std::string& hint);

}  // namespace fleetsim
