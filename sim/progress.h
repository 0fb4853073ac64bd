// Progress of a long batch of simulations, for a person watching it (the CLI prints it on
// stderr), never for the results. A caller installs an observer on its thread; the outermost
// batch that thread starts (for_each_index) tells it how many of its simulations have finished,
// and each of those simulations how far it has come (simulated time against its horizon, or
// requests ended against its workload's count), so one long run shows progress too. The batches
// nested inside (a run's arms inside a sweep point) report nothing, so the count is of the
// units the user asked for: points of a sweep, replicates, arms of a run.
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
  // Simulation `index` of the batch has come `fraction` (0 to 1) of its way; called from the
  // simulation's own thread, at most once a simulated second.
  virtual void advanced(std::size_t index, double fraction) = 0;
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

// Tells the batch observer how far the simulation this thread runs has come; does nothing when
// no outermost batch runs it.
void report_simulated_fraction(double fraction);

// Makes this thread's simulation simulation `index` of `observer`'s batch (null: one that
// reports nothing) while it lives.
class ScopedSimulationSlot {
 public:
  ScopedSimulationSlot(ProgressObserver* observer, std::size_t index);
  ~ScopedSimulationSlot();
  ScopedSimulationSlot(const ScopedSimulationSlot&) = delete;
  ScopedSimulationSlot& operator=(const ScopedSimulationSlot&) = delete;

 private:
  ProgressObserver* previous_observer_;
  std::size_t previous_index_;
};

}  // namespace fleetsim
