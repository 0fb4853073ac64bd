// Private to calibration_fit.cc and calibration_file.cc: the little both need. Not part of the
// public API (models/calibration.h).
#pragma once

#include <string>

namespace fleetsim::calibration_detail {

// `v` printed with one printf conversion (e.g. "%.3g"): the numbers of error messages, notes,
// the table and the calibration file.
std::string fmt(const char* format, double v);

}  // namespace fleetsim::calibration_detail
