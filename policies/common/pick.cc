#include "policies/common/pick.h"

#include <vector>

#include "sim/errors.h"

namespace fleetsim {

TieBreak parse_tie_break(const std::string& text) {
  if (text == "random") return TieBreak::kRandom;
  if (text == "lowest_index") return TieBreak::kLowestIndex;
  throw ScenarioError("tie_break: '" + text + "' is not one of: random, lowest_index");
}

ParamSpec& add_tie_break_param(ParamSpec& spec, const std::string& what) {
  return spec.text("tie_break", "random",
                   "candidates with the same " + what +
                       ": 'random' = uniformly among them (the upstream router's rule); "
                       "'lowest_index' = the one with the smallest pod index",
                   {"random", "lowest_index"});
}

size_t argmin_candidate(std::span<const PodState> candidates,
                        const std::function<double(const PodState&)>& value, TieBreak tie,
                        Rng& rng) {
  if (candidates.empty()) throw InternalError("argmin over no candidates");
  std::vector<size_t> best;
  double best_value = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const double v = value(candidates[i]);
    if (best.empty() || v < best_value) {
      best.assign(1, i);
      best_value = v;
    } else if (v == best_value) {
      best.push_back(i);
    }
  }
  if (best.size() == 1) return best.front();
  if (tie == TieBreak::kLowestIndex) {
    size_t chosen = best.front();
    for (const size_t i : best) {
      if (candidates[i].index < candidates[chosen].index) chosen = i;
    }
    return chosen;
  }
  std::uniform_int_distribution<size_t> any(0, best.size() - 1);
  return best[any(rng)];
}

}  // namespace fleetsim
