#include "sim/input_files.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

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

}  // namespace fleetsim
