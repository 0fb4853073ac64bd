// What every fuzz target shares. The readers under test take paths, so an input becomes a file
// of the fuzzing process's own; and the only exceptions a reader may let out are fleetsim's
// user-facing errors (sim/errors.h): anything else, an InternalError included, escapes the
// target and libFuzzer reports it as a crash with the input that caused it.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/errors.h"

namespace fleetsim::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input written to one file a process reuses for every input (named by its pid, so parallel
// fuzzing jobs do not share it); `suffix` is the extension a reader expects (".csv", ".jsonl").
class InputFile {
 public:
  InputFile(std::string_view text, const std::string& suffix)
      : path_((std::filesystem::temp_directory_path() /
               ("fleetsim-fuzz-" + std::to_string(::getpid()) + suffix))
                  .string()) {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    if (!out.flush()) throw std::runtime_error("fuzz: cannot write " + path_);
  }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs `body`, swallowing the errors a user's bad input is meant to get.
template <typename Body>
void user_errors_only(Body&& body) {
  try {
    body();
  } catch (const InternalError&) {
    throw;
  } catch (const Error&) {
  }
}

// The lines of `text` that start with `prefix`, without it: the --set overrides a scenario input
// carries as YAML comments ("#--set fleet.pods=4"), so the text stays a valid scenario.
inline std::vector<std::string> prefixed_lines(std::string_view text, std::string_view prefix) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (line.starts_with(prefix)) out.emplace_back(line.substr(prefix.size()));
    at = end + 1;
  }
  return out;
}

}  // namespace fleetsim::fuzz
