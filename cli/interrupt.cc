#include "cli/interrupt.h"

#include <signal.h>

#include <atomic>
#include <csignal>

#include "sim/stop.h"

namespace fleetsim::cli {

namespace {

volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_interrupt(int signal) {
  g_signal = signal;
  // A lock-free atomic store: safe in a signal handler.
  process_stop_flag().request();
}

}  // namespace

void stop_on_interrupt() {
  static_assert(std::atomic<bool>::is_always_lock_free);
  process_stop_flag();  // constructed before a handler may touch it
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second signal takes its default action
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupting_signal() { return g_signal; }

}  // namespace fleetsim::cli
