// Helpers for the trace readers' tests: temporary files and the message of an expected error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>

#include "sim/errors.h"

namespace fleetsim::testing {

// Writes `text` to a file named `name` in the test's temporary directory; returns its path. The
// name is prefixed with the running test's, since ctest runs tests in parallel and two tests
// writing one path would read each other's half-written files.
inline std::string write_temp(const std::string& name, const std::string& text) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string prefix =
      test != nullptr ? std::string(test->test_suite_name()) + "." + test->name() + "." : "";
  std::replace(prefix.begin(), prefix.end(), '/', '_');  // parameterized tests' names hold '/'
  const std::string path = ::testing::TempDir() + "/" + prefix + name;
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
