// The Python code a simulation calls (a routing policy's pick and hooks, its construction and
// its end) runs on the Python thread that started the run, never on the simulation's threads.
// CPython runs signal handlers on the main thread only, so a policy that blocks (time.sleep, a
// socket) on a simulation thread could not be interrupted; on the calling thread, Ctrl-C
// interrupts it as it would any Python code, and KeyboardInterrupt ends the run.
#pragma once

#include <pybind11/pybind11.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <type_traits>

#include "sim/stop.h"

namespace fleetsim::py_bindings {

class PythonCallQueue {
 public:
  // Serves the simulations that obey `run`: that flag and every flag chained below it.
  explicit PythonCallQueue(const StopFlag& run);
  ~PythonCallQueue();
  PythonCallQueue(const PythonCallQueue&) = delete;
  PythonCallQueue& operator=(const PythonCallQueue&) = delete;

  // A simulation thread (without the GIL): runs `f` on the serving thread, waits for it, and
  // rethrows what it threw.
  void call(const std::function<void()>& f);
  // A simulation thread: the run is over, serve() returns once the queue is empty.
  void finish();
  // The Python thread that started the run (with the GIL): runs the calls as they come until
  // finish(), and `tick` after each call and at least every 100 ms (to handle signals).
  void serve(const std::function<void()>& tick);

  // The queue serving the simulations of this thread, or nullptr when none does (a Python
  // policy called outside a run: its calls run where they are made).
  static PythonCallQueue* of_this_thread();

 private:
  struct Pending {
    const std::function<void()>* f;
    std::exception_ptr error;
    bool done = false;
  };
  const StopFlag& run_;
  std::mutex mutex_;
  std::condition_variable wake_;      // the server: a call came, or the run finished
  std::condition_variable answered_;  // the callers: a call was run
  std::deque<Pending*> queue_;
  bool finished_ = false;
};

// Runs `f` (Python code) under the GIL on the thread `calls` names (nullptr: here) and returns
// its result.
template <class F>
auto call_python(PythonCallQueue* calls, F&& f) -> decltype(f()) {
  using Result = decltype(f());
  if (calls == nullptr) {
    const pybind11::gil_scoped_acquire gil;
    return f();
  }
  if constexpr (std::is_void_v<Result>) {
    calls->call([&] {
      const pybind11::gil_scoped_acquire gil;
      f();
    });
  } else {
    std::optional<Result> out;
    calls->call([&] {
      const pybind11::gil_scoped_acquire gil;
      out.emplace(f());
    });
    return std::move(*out);
  }
}

}  // namespace fleetsim::py_bindings
