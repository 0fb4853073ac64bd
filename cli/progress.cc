#include "cli/progress.h"

#include <cmath>

#include <fmt/format.h>

namespace fleetsim::cli {

StderrProgress::StderrProgress(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

void StderrProgress::started(std::size_t total) {
  (void)total;
  const std::lock_guard lock(mutex_);
  start_ = Clock::now();
  last_ = start_;
  shown_ = false;
}

void StderrProgress::finished(std::size_t done, std::size_t total) {
  const std::lock_guard lock(mutex_);
  const Clock::time_point now = Clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  const bool last = done == total;
  bool due = false;
  if (terminal_) {
    // A batch done within a second (most of a validate) leaves the terminal alone.
    due = last ? shown_ : elapsed_s >= 1.0 && now - last_ >= std::chrono::milliseconds(250);
  } else {
    due = last || now - last_ >= std::chrono::seconds(10);
  }
  if (!due) return;
  last_ = now;
  shown_ = true;
  print(done, total, elapsed_s);
}

void StderrProgress::print(std::size_t done, std::size_t total, double elapsed_s) {
  std::string line =
      fmt::format("{} of {} simulations finished, {:.0f} s", done, total, std::floor(elapsed_s));
  if (done < total && done > 0) {
    const double left_s = elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
    line += fmt::format(", about {:.0f} s left", std::ceil(left_s));
  }
  if (terminal_) {
    // \r and erase-to-end rewrite the line; the last one ends it.
    out_ << "\r" << line << "\x1b[K" << (done == total ? "\n" : "") << std::flush;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

}  // namespace fleetsim::cli
