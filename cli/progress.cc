#include "cli/progress.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace fleetsim::cli {

StderrProgress::StderrProgress(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}

void StderrProgress::started(std::size_t total) {
  const std::lock_guard lock(mutex_);
  start_ = Clock::now();
  last_ = start_;
  shown_ = false;
  done_ = 0;
  total_ = total;
  fractions_.assign(total, 0.0);
  fractions_known_ = false;
}

void StderrProgress::finished(std::size_t done, std::size_t total) {
  const std::lock_guard lock(mutex_);
  done_ = done;
  total_ = total;
  const Clock::time_point now = Clock::now();
  if (!due(now, done == total)) return;
  last_ = now;
  shown_ = true;
  print(std::chrono::duration<double>(now - start_).count());
}

void StderrProgress::advanced(std::size_t index, double fraction) {
  const std::lock_guard lock(mutex_);
  if (index >= fractions_.size()) return;
  fractions_[index] = std::clamp(fraction, 0.0, 1.0);
  if (fraction < 1.0) fractions_known_ = true;
  const Clock::time_point now = Clock::now();
  if (!due(now, false)) return;
  last_ = now;
  shown_ = true;
  print(std::chrono::duration<double>(now - start_).count());
}

bool StderrProgress::due(Clock::time_point now, bool last) const {
  if (terminal_) {
    // A batch done within a second (most of a validate) leaves the terminal alone.
    const double elapsed_s = std::chrono::duration<double>(now - start_).count();
    return last ? shown_ : elapsed_s >= 1.0 && now - last_ >= std::chrono::milliseconds(250);
  }
  return last || now - last_ >= std::chrono::seconds(10);
}

void StderrProgress::print(double elapsed_s) {
  std::string line = fmt::format("{} of {} simulations finished", done_, total_);
  // The batch's work done: whole simulations, or how far each has come when they tell.
  double work = static_cast<double>(done_);
  if (fractions_known_ && done_ < total_) {
    work = std::accumulate(fractions_.begin(), fractions_.end(), 0.0);
    line +=
        fmt::format(", {:.0f}% simulated", std::floor(100.0 * work / static_cast<double>(total_)));
  }
  line += fmt::format(", {:.0f} s", std::floor(elapsed_s));
  if (done_ < total_ && work > 0) {
    const double left_s = elapsed_s / work * (static_cast<double>(total_) - work);
    line += fmt::format(", about {:.0f} s left", std::ceil(left_s));
  }
  if (terminal_) {
    // \r and erase-to-end rewrite the line; the last one ends it.
    out_ << "\r" << line << "\x1b[K" << (done_ == total_ ? "\n" : "") << std::flush;
  } else {
    out_ << line << "\n" << std::flush;
  }
}

}  // namespace fleetsim::cli
