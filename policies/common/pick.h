// Picking the candidate with the smallest load, and how ties between candidates are broken.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "policies/policy.h"

namespace fleetsim {

// How a tie between equally good candidates is broken.
enum class TieBreak {
  kRandom,       // uniformly among the tied candidates (AIBrix, Dynamo, the EPP picker)
  kLowestIndex,  // the tied candidate with the smallest pod index (deterministic, no draw)
};
TieBreak parse_tie_break(const std::string& text);
// The `tie_break` parameter (default random); `what` names the quantity that ties.
ParamSpec& add_tie_break_param(ParamSpec& spec, const std::string& what);

// Position in `candidates` of the candidate with the smallest `value`; ties by `tie`. Draws from
// `rng` only when two or more candidates tie under kRandom. `candidates` must not be empty.
size_t argmin_candidate(std::span<const PodState> candidates,
                        const std::function<double(const PodState&)>& value, TieBreak tie,
                        Rng& rng);

}  // namespace fleetsim
