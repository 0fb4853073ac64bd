// Helpers for the trace readers' tests: temporary files and the message of an expected error.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>

#include "sim/errors.h"

namespace fleetsim::testing {

// Writes `text` to a file named `name` in the test's temporary directory; returns its path.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out << text;
  return path;
}

// The message of the TraceError `f` throws ("" and a test failure when it throws none).
inline std::string trace_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a TraceError";
  return "";
}

inline std::string shared_path(const std::string& rel) {
  return std::string(FLEETSIM_SHARED_DIR) + "/" + rel;
}

}  // namespace fleetsim::testing
