#include "bindings/python_calls.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace fleetsim::py_bindings {
namespace {

// The queues of the runs in progress (one per Python thread running one).
std::mutex g_registry_mutex;
std::vector<const PythonCallQueue*>& registry() {
  static std::vector<const PythonCallQueue*> queues;
  return queues;
}

}  // namespace

PythonCallQueue::PythonCallQueue(const StopFlag& run) : run_(run) {
  const std::lock_guard lock(g_registry_mutex);
  registry().push_back(this);
}

PythonCallQueue::~PythonCallQueue() {
  const std::lock_guard lock(g_registry_mutex);
  auto& queues = registry();
  queues.erase(std::remove(queues.begin(), queues.end(), this), queues.end());
}

PythonCallQueue* PythonCallQueue::of_this_thread() {
  const std::lock_guard lock(g_registry_mutex);
  for (const StopFlag* flag = &current_stop_flag(); flag != nullptr; flag = flag->parent()) {
    for (const PythonCallQueue* q : registry()) {
      if (&q->run_ == flag) return const_cast<PythonCallQueue*>(q);
    }
  }
  return nullptr;
}

void PythonCallQueue::call(const std::function<void()>& f) {
  Pending pending{&f, nullptr, false};
  std::unique_lock lock(mutex_);
  if (finished_) {  // nothing serves the queue any more: run it here
    lock.unlock();
    f();
    return;
  }
  queue_.push_back(&pending);
  wake_.notify_one();
  answered_.wait(lock, [&] { return pending.done; });
  if (pending.error) std::rethrow_exception(pending.error);
}

void PythonCallQueue::finish() {
  const std::lock_guard lock(mutex_);
  finished_ = true;
  wake_.notify_one();
}

void PythonCallQueue::serve(const std::function<void()>& tick) {
  while (true) {
    Pending* next = nullptr;
    {
      const pybind11::gil_scoped_release unlocked;
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::milliseconds(100),
                     [&] { return !queue_.empty() || finished_; });
      if (!queue_.empty()) {
        next = queue_.front();
        queue_.pop_front();
      } else if (finished_) {
        break;
      }
    }
    if (next != nullptr) {
      try {
        (*next->f)();
      } catch (...) {
        next->error = std::current_exception();
      }
      {
        const std::lock_guard lock(mutex_);
        next->done = true;
      }
      answered_.notify_all();
    }
    tick();
  }
}

}  // namespace fleetsim::py_bindings
