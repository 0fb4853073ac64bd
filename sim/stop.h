// Stopping simulations before their end, from outside them: a sibling (another arm of the run,
// another point of the sweep) failed, so the batch's figures will be thrown away; or the user
// interrupted (Ctrl-C in Python). The drivers that run simulations side by side install a flag
// for their workers (for_each_index), chained to their caller's, and the event loop polls the
// flag of its thread every few thousand events. A run nobody stops is untouched by this.
#pragma once

#include <atomic>

#include "sim/errors.h"

namespace fleetsim {

class StopFlag {
 public:
  explicit StopFlag(const StopFlag* parent = nullptr) : parent_(parent) {}
  StopFlag(const StopFlag&) = delete;
  StopFlag& operator=(const StopFlag&) = delete;

  void request() { set_.store(true, std::memory_order_relaxed); }
  void clear() { set_.store(false, std::memory_order_relaxed); }
  bool requested() const {
    return set_.load(std::memory_order_relaxed) || (parent_ != nullptr && parent_->requested());
  }
  // The flag this one is chained to (nullptr for the root): a simulation thread finds the run
  // it belongs to by walking up from current_stop_flag().
  const StopFlag* parent() const { return parent_; }

 private:
  std::atomic<bool> set_{false};
  const StopFlag* parent_;
};

// The process-wide root of every other flag: raised to stop every simulation of the process
// (Python's exit hook); a user's interrupt raises the flag of its own call (bindings/common.h).
StopFlag& process_stop_flag();
// The flag the simulations of this thread obey: the one a driver installed, else the root.
const StopFlag& current_stop_flag();

// Installs `flag` for this thread while it lives.
class ScopedStopFlag {
 public:
  explicit ScopedStopFlag(const StopFlag& flag);
  ~ScopedStopFlag();
  ScopedStopFlag(const ScopedStopFlag&) = delete;
  ScopedStopFlag& operator=(const ScopedStopFlag&) = delete;

 private:
  const StopFlag* previous_;
};

// What a simulation that was stopped throws. The drivers report a sibling's own error before
// this one, so a user sees why the batch stopped.
class StoppedError : public Error {
 public:
  StoppedError()
      : Error(
            "the simulation was stopped before its end (a simulation beside it failed, or an "
            "interrupt)") {}
};

}  // namespace fleetsim
