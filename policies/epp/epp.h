// The Endpoint Picker (EPP) of the Gateway API Inference Extension (GIE) / llm-d inference
// scheduler, as one routing policy: producers (the approximate prefix index; the in-flight load:
// request counts from PodState, which the gateway fills, tokens as the EPP estimates them) ->
// filters -> weighted scorers -> picker.
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "policies/epp/approx_prefix_index.h"
#include "policies/epp/plugins.h"
#include "policies/policy.h"

namespace fleetsim {

class EppPolicy : public RoutingPolicy {
 public:
  EppPolicy(const Params& params, const PolicyContext& ctx);

  int pick(const Request& request, std::span<const PodState> candidates,
           const RouteContext& ctx) override;
  // GIE writes the index in PreRequest, for the pod the request is sent to.
  void on_dispatched(const Request& request, int pod) override;
  // The inflight-load-producer drops a request when its response ends (ResponseBody hook).
  void on_finished(const Request& request, int pod) override;
  // The tokens the inflight-load-producer books for a request: GIE's SimpleTokenEstimator
  // (body bytes / 4 for the input, plus 1.5 times that for the output), or the exact prompt +
  // output tokens.
  std::int64_t estimate_tokens(const Request& request) const;
  // prefix_source: precise (llm-d's precise-prefix-cache scorer): the pods' true cache state,
  // from their KV events, instead of the approximate index.
  bool wants_kv_events() const override { return precise_; }
  bool reads_engine_state() const override;
  bool follows_prompt_content() const override;
  void on_kv_events(int pod, std::span<const KvEvent> events) override;

  // The prompt's prefix hashes as this EPP computes them. A pick and the dispatch after it read
  // them for the same request: the last chain derived from a request's engine hashes is kept
  // (the reference is valid until the next call).
  const std::vector<BlockHash>& prefix_hashes(const Request& request) const;
  // Candidates left after the filters (positions into `candidates`) and their weighted totals;
  // pick() is filter + this + the picker. For tests and traces.
  struct Scored {
    Kept kept;
    std::vector<double> totals;
  };
  Scored evaluate(const Request& request, std::span<const PodState> candidates);

  const ApproxPrefixIndex& index() const { return index_; }

 private:
  EppCycle make_cycle(const Request& request, std::span<const PodState> candidates) const;
  // inflight_release = ttl: the candidates with the in-flight load this EPP booked itself in
  // the last request_timeout, in place of the gateway's live counts.
  std::span<const PodState> booked_view(std::span<const PodState> candidates, TimeNs now);
  // inflight_release = end_of_stream: the gateway's live request counts, with the tokens this
  // EPP booked (its own estimate) in place of the exact ones.
  std::span<const PodState> estimated_view(std::span<const PodState> candidates);
  // inflight_release = at_pick: nothing in flight anywhere (the counts were given back when the
  // gateway closed the ext-proc stream, right after the pick).
  std::span<const PodState> idle_view(std::span<const PodState> candidates);

  struct Booking {
    TimeNs at;
    std::int64_t tokens;
  };

  std::int32_t block_tokens_;
  std::int32_t max_blocks_;
  ApproxPrefixIndex index_;
  bool precise_ = false;
  std::vector<std::unordered_set<BlockHash>> cached_;  // per pod, from KV events
  std::vector<std::unique_ptr<EppFilter>> filters_;
  std::vector<std::pair<std::unique_ptr<EppScorer>, double>> scorers_;  // scorer, weight
  std::unique_ptr<EppPicker> picker_;
  // In-flight load as the EPP books it when the gateway never reports a response's end.
  bool release_by_ttl_ = false;
  bool release_at_pick_ = false;
  TimeNs request_timeout_ = 0;
  TimeNs last_pick_ = 0;
  std::vector<std::deque<Booking>> booked_;  // per pod, oldest first
  std::vector<std::int64_t> booked_tokens_;  // per pod, sum over booked_
  std::vector<PodState> view_;
  bool estimate_like_gie_ = true;
  double chars_per_token_ = 4.0;
  std::vector<std::int64_t> estimated_tokens_;  // per pod, end_of_stream mode
  // prefix_hashes' last chain and what it was computed from: the request's engine hashes (held,
  // so that no other request's can take their address), its prompt length and its model.
  struct HashedRequest {
    std::shared_ptr<const std::vector<BlockHash>> source;
    std::int32_t prompt_tokens = -1;
    std::string model;
    std::vector<BlockHash> hashes;
  };
  mutable HashedRequest last_hashed_;
};

// Splits "a, b,c" into names; "" and "none" give an empty list.
std::vector<std::string> split_epp_list(const std::string& text);
// Parses "name:weight,name" (weight 1 when omitted); a bad weight throws ScenarioError.
std::vector<std::pair<std::string, double>> parse_weighted_scorers(const std::string& text);

}  // namespace fleetsim
