#include "sim/progress.h"

namespace fleetsim {
namespace {

thread_local ProgressObserver* g_observer = nullptr;

}  // namespace

ProgressObserver* current_progress_observer() { return g_observer; }

ScopedProgressObserver::ScopedProgressObserver(ProgressObserver* observer) : previous_(g_observer) {
  g_observer = observer;
}

ScopedProgressObserver::~ScopedProgressObserver() { g_observer = previous_; }

}  // namespace fleetsim
