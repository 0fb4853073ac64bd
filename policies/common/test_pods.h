// Candidate lists for policy tests: pods named as the runner names them ("pod-N").
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace fleetsim::testing {

inline std::vector<PodState> pods(std::initializer_list<int> indices) {
  std::vector<PodState> out;
  for (const int i : indices) {
    PodState p;
    p.index = i;
    p.name = "pod-" + std::to_string(i);
    out.push_back(p);
  }
  return out;
}

}  // namespace fleetsim::testing
