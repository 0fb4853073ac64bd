// Result files written whole or not at all. Each file goes to a temporary file beside it, is
// written, flushed to disk and checked, and only then renamed over its path, so a full disk, a
// killed run or a failed write never leaves a cut file, and never destroys the file a user
// had there before. Several files of one result (`--out DIR`) are staged together and renamed
// only once every one of them is written.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fleetsim {

class OutputFiles {
 public:
  OutputFiles() = default;
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;
  // Removes the temporary files of a set that was never committed.
  ~OutputFiles();

  // Writes `text` to a temporary file in `path`'s folder (created if missing). Throws
  // std::filesystem::filesystem_error naming `path` and the reason (errno) when it cannot.
  void stage(const std::filesystem::path& path, std::string_view text);
  // Renames every staged file over its path, in the order staged.
  void commit();

 private:
  struct Staged {
    std::filesystem::path temporary;
    std::filesystem::path path;
  };
  std::vector<Staged> staged_;
};

// One file, written whole or not at all (OutputFiles with one file).
void write_output_file(const std::filesystem::path& path, std::string_view text);

}  // namespace fleetsim
