#include "sim/input_files.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "sim/errors.h"
#include "sim/params.h"

namespace fleetsim {

namespace fs = std::filesystem;

std::size_t max_input_bytes() {
  const char* env = std::getenv("FLEETSIM_MAX_INPUT_MIB");
  if (env != nullptr && *env != '\0') {
    char* end = nullptr;
    const double mib = std::strtod(env, &end);
    if (end != env && *end == '\0' && mib > 0 && mib < 1e9) {
      return static_cast<std::size_t>(mib * 1024 * 1024);
    }
  }
  return std::size_t{64} << 20;
}

std::optional<std::string> input_file_problem(const std::string& path, std::size_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) return std::nullopt;
  if (fs::is_directory(status)) return "is a directory; expected a file";
  if (!fs::is_regular_file(status)) {
    return "is not a regular file (a FIFO, a socket or a device); expected a file";
  }
  const auto size = fs::file_size(path, ec);
  if (ec) return "cannot read the file's size: " + ec.message();
  if (size > max_bytes) {
    return "is " + std::to_string(size >> 20) + " MiB, over the limit of " +
           std::to_string(max_bytes >> 20) + " MiB for an input file (FLEETSIM_MAX_INPUT_MIB " +
           "raises it)";
  }
  if (looks_gzipped(path)) return "is gzip-compressed; decompress it first (gunzip)";
  return std::nullopt;
}

std::optional<std::string> control_byte_problem(const std::string& text) {
  std::size_t line = 1;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      ++line;
      continue;
    }
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f) {
      std::ostringstream out;
      out << line << ": a control byte (0x" << std::hex << static_cast<int>(c)
          << ") in the text; expected a text file";
      return out.str();
    }
  }
  return std::nullopt;
}

bool looks_gzipped(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char magic[2] = {};
  return in.read(magic, 2) && static_cast<unsigned char>(magic[0]) == 0x1f &&
         static_cast<unsigned char>(magic[1]) == 0x8b;
}

std::optional<std::string> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool getline_bounded(std::istream& in, std::string& line, std::size_t max, bool& too_long) {
  line.clear();
  too_long = false;
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    any = true;
    if (c == '\n') return true;
    if (line.size() >= max) {
      too_long = true;
      return true;
    }
    line.push_back(static_cast<char>(c));
  }
  in.setstate(std::ios::eofbit);
  return any;
}

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The folder of the file `where` names; empty for text that came from no file ("<yaml>",
// "<dict>" from Python), whose paths resolve against the current directory.
fs::path naming_folder(const YamlWhere& where) {
  if (where.file.empty() || where.file.front() == '<') return {};
  return fs::path(where.file).parent_path();
}

std::string joined(const std::vector<std::string>& places) {
  std::string out;
  for (const auto& p : places) out += (out.empty() ? "" : ", then ") + p;
  return out;
}

}  // namespace

std::string data_folder() {
  if (const char* dir = std::getenv("FLEETSIM_DATA_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
#ifdef FLEETSIM_DEFAULT_DATA_DIR
  std::error_code ec;
  const fs::path configured = fs::path(FLEETSIM_DEFAULT_DATA_DIR).lexically_normal();
  if (fs::is_directory(configured, ec)) return configured.string();
#endif
  return {};
}

std::string input_file_path(const std::string& value, const YamlWhere& where,
                            const YAML::Node& node, const std::string& what,
                            const std::string& hint) {
  if (value.empty()) throw ScenarioError(where.at(node) + ": expected the path of the " + what);
  if (fs::path(value).is_absolute()) {
    if (is_file(value)) return value;
    throw ScenarioError(where.at(node) + ": cannot open the " + what + " '" + value + "'; " + hint);
  }
  std::vector<std::string> looked;
  const bool typed_here = where.set_by_override(node);
  const fs::path folder = typed_here ? fs::path() : naming_folder(where);
  const fs::path beside = (folder / value).lexically_normal();
  if (is_file(beside)) return beside.string();
  looked.push_back(folder.empty() ? "the current directory" : folder.string() + "/");
  if (!typed_here) {
    const std::string data = data_folder();
    if (!data.empty() && is_file(fs::path(data) / value)) {
      return (fs::path(data) / value).lexically_normal().string();
    }
    looked.push_back(data.empty() ? "the data folder (FLEETSIM_DATA_DIR is not set)"
                                  : "the data folder " + data + "/");
  }
  std::string message = where.at(node) + ": cannot open the " + what + " '" + value +
                        "' (looked in " + joined(looked) + "); ";
  if (!folder.empty() && is_file(value)) {
    std::error_code ec;
    const fs::path relative = fs::relative(fs::absolute(value, ec), fs::absolute(folder, ec), ec);
    message +=
        "it exists from the current directory, but a path inside a file resolves "
        "against that file's folder: write '" +
        relative.string() + "' (or give it with --set)";
  } else {
    message += hint;
  }
  throw ScenarioError(message);
}

}  // namespace fleetsim
