// What `--progress` shows on stderr while a batch of simulations runs (the points of a sweep,
// the replicates of a campaign, the arms of a run): "12 of 40 simulations finished, 31 s,
// about 72 s left". On a terminal one line rewritten in place, at most four times a second,
// once a batch has run for a second; elsewhere (a log file, CI) a line at most every 10 s and
// the end of every batch. Wall-clock time reaches only stderr, never a result.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>

#include "sim/progress.h"

namespace fleetsim::cli {

class StderrProgress final : public ProgressObserver {
 public:
  StderrProgress(std::ostream& out, bool terminal);
  void started(std::size_t total) override;
  void finished(std::size_t done, std::size_t total) override;

 private:
  using Clock = std::chrono::steady_clock;
  void print(std::size_t done, std::size_t total, double elapsed_s);

  std::mutex mutex_;
  std::ostream& out_;
  bool terminal_;
  Clock::time_point start_{};
  Clock::time_point last_{};
  bool shown_ = false;  // this batch has printed a line
};

}  // namespace fleetsim::cli
