#include "sim/output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

namespace fleetsim {

namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& path, int error) {
  throw std::filesystem::filesystem_error(what, path,
                                          std::error_code(error, std::generic_category()));
}

// Writes all of `text` to `fd`, then flushes it to disk; the errno of the first failure, or 0.
int write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    text.remove_prefix(static_cast<size_t>(n));
  }
  return ::fsync(fd) == 0 ? 0 : errno;
}

}  // namespace

OutputFiles::~OutputFiles() {
  for (const Staged& s : staged_) {
    std::error_code ignored;
    std::filesystem::remove(s.temporary, ignored);
  }
}

void OutputFiles::stage(const std::filesystem::path& path, std::string_view text) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  std::error_code made;
  std::filesystem::create_directories(folder, made);
  if (made) fail("cannot create the folder of the output file", path, made.value());
  // A hidden name in the same folder: a rename never crosses file systems.
  std::string name = "." + path.filename().string() + ".XXXXXX";
  std::filesystem::path pattern = folder / name;
  std::string buffer = pattern.string();
  const int fd = ::mkstemp(buffer.data());
  if (fd < 0) fail("cannot write the output file", path, errno);
  staged_.push_back({buffer, path});
  const int error = write_all(fd, text);
  const int closed = ::close(fd) == 0 ? 0 : errno;
  if (error != 0 || closed != 0) {
    fail("cannot write the output file", path, error != 0 ? error : closed);
  }
  // mkstemp creates the file readable by its owner only; results are ordinary files.
  std::error_code ignored;
  std::filesystem::permissions(
      buffer,
      std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
          std::filesystem::perms::group_read | std::filesystem::perms::others_read,
      ignored);
}

void OutputFiles::commit() {
  // A rename cannot replace a folder: refuse before any file of the set is replaced.
  for (const Staged& s : staged_) {
    std::error_code ignored;
    if (std::filesystem::is_directory(s.path, ignored)) {
      fail("cannot replace the output file", s.path, EISDIR);
    }
  }
  for (const Staged& s : staged_) {
    if (::rename(s.temporary.c_str(), s.path.c_str()) != 0) {
      fail("cannot replace the output file", s.path, errno);
    }
  }
  staged_.clear();
}

void write_output_file(const std::filesystem::path& path, std::string_view text) {
  OutputFiles files;
  files.stage(path, text);
  files.commit();
}

}  // namespace fleetsim
