// Progress of a long batch of simulations, for a person watching it (the CLI prints it on
// stderr), never for the results. A caller installs an observer on its thread; the outermost
// batch that thread starts (for_each_index) tells it how many of its simulations have finished.
// The batches nested inside (a run's arms inside a sweep point) report nothing, so the count is
// of the units the user asked for: points of a sweep, replicates, arms of a run.
#pragma once

#include <cstddef>

namespace fleetsim {

class ProgressObserver {
 public:
  virtual ~ProgressObserver() = default;
  // A batch of `total` simulations starts.
  virtual void started(std::size_t total) = 0;
  // One more finished (ran through, failed or stopped); called from the batch's worker threads,
  // so an observer serialises its own state.
  virtual void finished(std::size_t done, std::size_t total) = 0;
};

// The observer of this thread's next batch, or null.
ProgressObserver* current_progress_observer();

// Installs `observer` (null: none) for this thread while it lives.
class ScopedProgressObserver {
 public:
  explicit ScopedProgressObserver(ProgressObserver* observer);
  ~ScopedProgressObserver();
  ScopedProgressObserver(const ScopedProgressObserver&) = delete;
  ScopedProgressObserver& operator=(const ScopedProgressObserver&) = delete;

 private:
  ProgressObserver* previous_;
};

}  // namespace fleetsim
