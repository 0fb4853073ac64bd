#include "sim/stop.h"

namespace fleetsim {
namespace {

thread_local const StopFlag* g_current = nullptr;

}  // namespace

StopFlag& process_stop_flag() {
  static StopFlag root;
  return root;
}

const StopFlag& current_stop_flag() {
  return g_current != nullptr ? *g_current : process_stop_flag();
}

ScopedStopFlag::ScopedStopFlag(const StopFlag& flag) : previous_(g_current) { g_current = &flag; }
ScopedStopFlag::~ScopedStopFlag() { g_current = previous_; }

}  // namespace fleetsim
