// The EPP's plug-ins: filters narrow the candidates, scorers grade each in [0, 1], the picker
// chooses from the weighted sums. Each mirrors one upstream plug-in, cited at its definition.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "policies/policy.h"

namespace fleetsim {

// One scheduling cycle: every candidate the gateway offered, with what the producers computed.
struct EppCycle {
  const Request* request = nullptr;
  std::span<const PodState> pods;    // all candidates, before filtering
  std::vector<double> prefix_score;  // per candidate: matched blocks / prompt blocks (0 if none)
};

// Positions into EppCycle::pods.
using Kept = std::vector<size_t>;

class EppFilter {
 public:
  virtual ~EppFilter() = default;
  virtual Kept filter(const EppCycle& cycle, Kept kept) = 0;
  // Whether it reads the engines' own state (RoutingPolicy::reads_engine_state); true unless
  // the plug-in says otherwise.
  virtual bool reads_engine_state() const { return true; }
  // As RoutingPolicy::follows_prompt_content.
  virtual bool follows_prompt_content() const { return false; }
};

class EppScorer {
 public:
  virtual ~EppScorer() = default;
  // Writes one score per kept candidate into `out` (same order as `kept`).
  virtual void score(const EppCycle& cycle, const Kept& kept, std::span<double> out) = 0;
  // The request was sent to `pod`; `cold` = no pod held any of its prefix (GIE PreRequest).
  virtual void dispatched(int pod, bool cold) {
    (void)pod;
    (void)cold;
  }
  // As EppFilter::reads_engine_state and EppFilter::follows_prompt_content.
  virtual bool reads_engine_state() const { return true; }
  virtual bool follows_prompt_content() const { return false; }
};

class EppPicker {
 public:
  virtual ~EppPicker() = default;
  // Returns a position into EppCycle::pods, one of `kept`; `totals` are the weighted sums.
  virtual size_t pick(const EppCycle& cycle, const Kept& kept, std::span<const double> totals) = 0;
};

// Everything a plug-in may be built from: the policy's params and its random streams' names.
struct EppPluginArgs {
  const Params* params = nullptr;
  const PolicyContext* ctx = nullptr;
};

std::vector<std::string> epp_filter_names();
std::vector<std::string> epp_scorer_names();
std::vector<std::string> epp_picker_names();

// Build a plug-in by name; an unknown name throws UnknownNameError listing the valid ones.
std::unique_ptr<EppFilter> make_epp_filter(const std::string& name, const EppPluginArgs& args);
std::unique_ptr<EppScorer> make_epp_scorer(const std::string& name, const EppPluginArgs& args);
std::unique_ptr<EppPicker> make_epp_picker(const std::string& name, const EppPluginArgs& args);

// Two totals within this distance are a tie for the max-score picker.
inline constexpr double kScoreTieEpsilon = 1e-9;

}  // namespace fleetsim
