// What `--progress` shows on stderr while a batch of simulations runs (the points of a sweep,
// the replicates of a campaign, the arms of a run): "12 of 40 simulations finished, 31 s,
// about 72 s left". When the simulations tell how far they have come (simulated time against a
// horizon, requests ended against the workload's count), the line says so and the time left
// counts it: "0 of 2 simulations finished, 37% simulated, 12 s, about 20 s left", so one long
// run shows progress too. On a terminal one line rewritten in place, at most four times a
// second, once a batch has run for a second; elsewhere (a log file, CI) a line at most every
// 10 s and the end of every batch. Wall-clock time reaches only stderr, never a result.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <ostream>
#include <vector>

#include "sim/progress.h"

namespace fleetsim::cli {

class StderrProgress final : public ProgressObserver {
 public:
  StderrProgress(std::ostream& out, bool terminal);
  void started(std::size_t total) override;
  void finished(std::size_t done, std::size_t total) override;
  void advanced(std::size_t index, double fraction) override;

 private:
  using Clock = std::chrono::steady_clock;
  // Whether a line is due now (the batch's last line always is, once any was shown).
  bool due(Clock::time_point now, bool last) const;
  void print(double elapsed_s);

  std::mutex mutex_;
  std::ostream& out_;
  bool terminal_;
  Clock::time_point start_{};
  Clock::time_point last_{};
  bool shown_ = false;  // this batch has printed a line
  std::size_t done_ = 0, total_ = 0;
  std::vector<double> fractions_;  // by simulation of the batch
  bool fractions_known_ = false;   // some simulation told how far it came
};

}  // namespace fleetsim::cli
