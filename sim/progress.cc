#include "sim/progress.h"

namespace fleetsim {
namespace {

thread_local ProgressObserver* g_observer = nullptr;
thread_local ProgressObserver* g_slot_observer = nullptr;
thread_local std::size_t g_slot_index = 0;

}  // namespace

ProgressObserver* current_progress_observer() { return g_observer; }

ScopedProgressObserver::ScopedProgressObserver(ProgressObserver* observer) : previous_(g_observer) {
  g_observer = observer;
}

ScopedProgressObserver::~ScopedProgressObserver() { g_observer = previous_; }

void report_simulated_fraction(double fraction) {
  if (g_slot_observer != nullptr) g_slot_observer->advanced(g_slot_index, fraction);
}

ScopedSimulationSlot::ScopedSimulationSlot(ProgressObserver* observer, std::size_t index)
    : previous_observer_(g_slot_observer), previous_index_(g_slot_index) {
  g_slot_observer = observer;
  g_slot_index = index;
}

ScopedSimulationSlot::~ScopedSimulationSlot() {
  g_slot_observer = previous_observer_;
  g_slot_index = previous_index_;
}

}  // namespace fleetsim
