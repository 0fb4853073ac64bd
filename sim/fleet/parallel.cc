#include "sim/fleet/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "sim/progress.h"
#include "sim/stop.h"

namespace fleetsim {

std::vector<std::exception_ptr> for_each_index(std::size_t n, int threads,
                                               const std::function<void(std::size_t)>& body) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  // One failure dooms the batch: the others stop at their next poll instead of running to the
  // end for figures nobody will see. Chained to the caller's flag, so an outer batch (a sweep
  // around a run's arms) or an interrupt stops this one too.
  StopFlag batch(&current_stop_flag());
  // Only the outermost batch reports progress: its workers run the nested ones with none.
  ProgressObserver* const progress = current_progress_observer();
  if (progress != nullptr) progress->started(n);
  std::atomic<std::size_t> finished{0};
  auto work = [&] {
    const ScopedStopFlag scope(batch);
    const ScopedProgressObserver no_progress(nullptr);
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        // An index taken after the batch was stopped does not build its simulation at all.
        if (batch.requested()) throw StoppedError();
        const ScopedSimulationSlot slot(progress, i);
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
        batch.request();
      }
      if (progress != nullptr) {
        progress->advanced(i, 1.0);
        progress->finished(++finished, n);
      }
    }
  };
  const std::size_t hw = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t count = std::min(n, threads > 0 ? static_cast<std::size_t>(threads) : hw);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < count; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return errors;
}

std::size_t first_error(const std::vector<std::exception_ptr>& errors) {
  std::size_t first = errors.size();
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const StoppedError&) {
      if (first == errors.size()) first = i;
      continue;
    } catch (...) {
    }
    return i;  // a failure of its own: why the others were stopped
  }
  return first;
}

void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  const std::size_t i = first_error(errors);
  if (i < errors.size()) std::rethrow_exception(errors[i]);
}

}  // namespace fleetsim
