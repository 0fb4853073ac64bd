#include "sim/fleet/parallel.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace fleetsim {

std::vector<std::exception_ptr> for_each_index(std::size_t n, int threads,
                                               const std::function<void(std::size_t)>& body) {
  std::vector<std::exception_ptr> errors(n);
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
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

void rethrow_first(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace fleetsim
