#include "sim/fleet/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "sim/errors.h"

namespace fleetsim {

RequestRecord& RecordCollector::at(std::int64_t id) {
  if (id < 0) throw InternalError("negative request id");
  if (static_cast<size_t>(id) >= records_.size()) {
    records_.resize(static_cast<size_t>(id) + 1);
    streams_.resize(records_.size());
  }
  return records_[static_cast<size_t>(id)];
}

RecordCollector::Stream& RecordCollector::stream(std::int64_t id) {
  at(id);
  return streams_[static_cast<size_t>(id)];
}

const std::vector<RequestRecord>& RecordCollector::records() const {
  for (size_t i = 0; i < records_.size(); ++i) {
    records_[i].last_token = streams_[i].last_token;
    records_[i].max_itl = streams_[i].max_itl;
  }
  return records_;
}

void RecordCollector::on_arrival(const Request& r, TimeNs t) {
  RequestRecord& rec = at(r.id);
  rec.attempts = r.attempt;
  if (r.attempt > 1) {
    rec.done = false;  // a retry: the request is open again, its first arrival stands
    rec.finished = -1;
    return;
  }
  rec.measured = r.measured;
  rec.tier = r.tier;
  rec.slo_class = r.slo_class;
  rec.tenant = r.tenant;
  rec.id = r.id;
  rec.conversation = r.conversation;
  rec.turn = r.turn;
  rec.arrival = t;
  rec.prompt_tokens = r.prompt_tokens;
}
void RecordCollector::on_dispatch(const Request& r, int pod, TimeNs t) {
  RequestRecord& rec = at(r.id);
  rec.pod = pod;
  rec.prefill_pod = -1;
  rec.dispatched = t;
  stream(r.id) = Stream{};  // a new attempt streams afresh
}
void RecordCollector::on_prefill_leg(const Request& leg, int pod, TimeNs) {
  at(leg.id).prefill_pod = pod;
}
void RecordCollector::on_admitted(const Request& r, int, std::int32_t cached, TimeNs) {
  at(r.id).cached_tokens = cached;
}
void RecordCollector::on_first_token(const Request& r, int, TimeNs t) { at(r.id).first_token = t; }
void RecordCollector::on_finished(const Request& r, int pod, Outcome outcome, TimeNs t) {
  RequestRecord& rec = at(r.id);
  rec.finished = t;
  rec.outcome = outcome;
  rec.pod = pod;
  rec.done = true;
  if (outcome == Outcome::kOk) rec.output_tokens = r.output_tokens;
}

void RecordCollector::on_step(int, const StepPlan& plan, TimeNs start, TimeNs duration) {
  const TimeNs end = start + duration;
  for (const ScheduledSeq& s : plan.scheduled) {
    if (s.context_tokens + s.new_tokens < s.seq_tokens) continue;  // a prefill chunk
    // A prefill pod's one token never reaches the client: its stream begins on the decode pod.
    if (s.prefill_leg) continue;
    Stream& st = stream(s.id);
    if (st.last_token >= 0) st.max_itl = std::max(st.max_itl, end - st.last_token);
    st.last_token = end;
  }
}

double quantile_sorted(const std::vector<double>& v, double prob) {
  const double h = prob * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (h - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  p.count = static_cast<std::int64_t>(v.size());
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto q = [&](double prob) { return quantile_sorted(v, prob); };
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  p.p50 = q(0.50);
  p.p95 = q(0.95);
  p.p99 = q(0.99);
  return p;
}

void ConcentrationSampler::sample(const std::vector<std::int32_t>& inflight) {
  if (inflight.empty()) return;
  const double total = std::accumulate(inflight.begin(), inflight.end(), 0.0);
  if (total <= 0) return;
  const double mean = total / static_cast<double>(inflight.size());
  const double ratio = *std::max_element(inflight.begin(), inflight.end()) / mean;
  sum_ += ratio;
  max_ = std::max(max_, ratio);
  ++n_;
}

void ConcentrationSampler::fill(RoutingEvidence& e) const {
  e.samples = n_;
  e.concentration_ratio = n_ > 0 ? sum_ / static_cast<double>(n_) : 0.0;
  e.concentration_ratio_max = max_;
}

namespace {

void conversation_affinity(const std::vector<RequestRecord>& records, RoutingEvidence& e) {
  // conversation -> (turn -> pod) of completed, measured turns.
  std::map<std::int64_t, std::map<std::int32_t, int>> turns;
  for (const auto& r : records) {
    if (r.arrival < 0 || !r.measured || r.conversation < 0 || r.pod < 0) continue;
    turns[r.conversation][r.turn] = r.pod;
  }
  std::int64_t warm = 0, same = 0, multi = 0, one_pod = 0;
  for (const auto& [conv, by_turn] : turns) {
    if (by_turn.size() < 2) continue;
    ++multi;
    bool all_same = true;
    for (auto it = std::next(by_turn.begin()); it != by_turn.end(); ++it) {
      auto prev = by_turn.find(it->first - 1);
      if (prev == by_turn.end()) continue;
      ++warm;
      if (prev->second == it->second) ++same;
      all_same = all_same && it->second == by_turn.begin()->second;
    }
    if (all_same) ++one_pod;
  }
  e.later_turns = warm;
  e.multi_turn = multi;
  e.same_pod_as_previous_turn =
      warm > 0 ? static_cast<double>(same) / static_cast<double>(warm) : 0;
  e.conversations_on_one_pod =
      multi > 0 ? static_cast<double>(one_pod) / static_cast<double>(multi) : 0;
}

}  // namespace

void RecordCollector::drop_unfinished_at(TimeNs end) {
  for (auto& r : records_) {
    if (r.measured && (!r.done || r.finished > end)) r.measured = false;
  }
}

void RecordCollector::reopen(std::int64_t id) {
  RequestRecord& rec = at(id);
  rec.done = false;
  rec.finished = -1;
}

ArmSummary summarize(const std::vector<RequestRecord>& records, std::vector<PodSummary> pods,
                     double window_s) {
  ArmSummary s;
  std::vector<double> ttft, warm_ttft, e2e, warm_e2e, tpot, max_itl;
  TimeNs first_arrival = INT64_MAX, last_finish = 0;
  std::int64_t out_tokens = 0;
  for (const auto& r : records) {
    if (r.arrival < 0 || !r.measured) continue;  // an id never used, or a warm-up request
    ++s.requests;
    first_arrival = std::min(first_arrival, r.arrival);
    if (!r.done) {
      ++s.unfinished;
      continue;
    }
    last_finish = std::max(last_finish, r.finished);
    if (r.outcome != Outcome::kOk) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    out_tokens += r.output_tokens;
    const bool warm = r.turn >= 2;
    const double t = ns_to_ms(r.first_token - r.arrival);
    const double e = ns_to_ms(r.finished - r.arrival);
    ttft.push_back(t);
    e2e.push_back(e);
    if (warm) {
      warm_ttft.push_back(t);
      warm_e2e.push_back(e);
    }
    if (r.output_tokens > 1) {
      tpot.push_back(tpot_ms(r));
      max_itl.push_back(ns_to_ms(r.max_itl));
    }
  }
  s.ttft_ms = percentiles(std::move(ttft));
  s.max_itl_ms = percentiles(std::move(max_itl));
  s.warm_ttft_ms = percentiles(std::move(warm_ttft));
  s.e2e_ms = percentiles(std::move(e2e));
  s.warm_e2e_ms = percentiles(std::move(warm_e2e));
  s.tpot_ms = percentiles(std::move(tpot));
  if (s.requests > 0 && (window_s > 0 || last_finish > first_arrival)) {
    s.duration_s = window_s > 0 ? window_s : ns_to_sec(last_finish - first_arrival);
    s.throughput_req_s = static_cast<double>(s.completed) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(out_tokens) / s.duration_s;
  }
  std::int64_t q = 0, h = 0;
  for (auto& p : pods) {
    q += p.prefix_cache_queries;
    h += p.prefix_cache_hits;
  }
  for (const auto& r : records) {
    if (r.arrival >= 0 && r.measured && r.pod >= 0 && static_cast<size_t>(r.pod) < pods.size()) {
      ++pods[static_cast<size_t>(r.pod)].requests;
    }
  }
  s.prefix_cache_reuse = q > 0 ? static_cast<double>(h) / static_cast<double>(q) : 0.0;
  KvOffloadSummary off;
  for (const auto& p : pods) {
    off.queries += p.external_prefix_cache_queries;
    off.hits += p.external_prefix_cache_hits;
  }
  if (off.queries > 0) {
    off.reuse = static_cast<double>(off.hits) / static_cast<double>(off.queries);
    off.combined_reuse = q > 0 ? static_cast<double>(h + off.hits) / static_cast<double>(q) : 0.0;
    s.kv_offload = off;
  }
  SpecDecodeSummary spec;
  for (const auto& p : pods) {
    spec.num_drafts += p.spec_num_drafts;
    spec.num_draft_tokens += p.spec_num_draft_tokens;
    spec.num_accepted_tokens += p.spec_num_accepted_tokens;
  }
  if (spec.num_drafts > 0) {
    const auto accepted = static_cast<double>(spec.num_accepted_tokens);
    spec.mean_acceptance_length = 1.0 + accepted / static_cast<double>(spec.num_drafts);
    spec.draft_acceptance_rate = accepted / static_cast<double>(spec.num_draft_tokens);
    s.spec_decode = spec;
  }
  conversation_affinity(records, s.routing);
  s.per_pod = std::move(pods);
  return s;
}

std::vector<PoolSummary> summarize_pools(const std::vector<RequestRecord>& records,
                                         const std::vector<PodSummary>& pods,
                                         const std::vector<std::int32_t>& pod_pools,
                                         std::vector<PoolSummary> pools) {
  const size_t n = pools.size();
  std::vector<std::vector<double>> ttft(n), tpot(n), e2e(n);
  std::vector<std::int64_t> queries(n, 0), hits(n, 0);
  auto pool_of = [&](int pod) -> std::int64_t {
    if (pod < 0 || static_cast<size_t>(pod) >= pod_pools.size()) return -1;
    const std::int32_t p = pod_pools[static_cast<size_t>(pod)];
    return p >= 0 && static_cast<size_t>(p) < n ? p : -1;
  };
  for (size_t i = 0; i < pods.size(); ++i) {
    const std::int64_t p = pool_of(static_cast<int>(i));
    if (p < 0) continue;
    queries[static_cast<size_t>(p)] += pods[i].prefix_cache_queries;
    hits[static_cast<size_t>(p)] += pods[i].prefix_cache_hits;
  }
  // A request counts in its decode pod's pool and, when another pool's pod computed its prompt,
  // in that prefill pool too: its first token waited for both.
  for (const auto& r : records) {
    if (r.arrival < 0 || !r.measured) continue;
    const std::int64_t decode = pool_of(r.pod);
    const std::int64_t prefill = pool_of(r.prefill_pod);
    for (const std::int64_t pi : {decode, prefill == decode ? std::int64_t{-1} : prefill}) {
      if (pi < 0) continue;
      const auto p = static_cast<size_t>(pi);
      PoolSummary& s = pools[p];
      ++s.requests;
      if (!r.done) {
        ++s.unfinished;
        continue;
      }
      if (r.outcome != Outcome::kOk) {
        ++s.failed;
        continue;
      }
      ++s.completed;
      ttft[p].push_back(ns_to_ms(r.first_token - r.arrival));
      e2e[p].push_back(ns_to_ms(r.finished - r.arrival));
      if (r.output_tokens > 1) tpot[p].push_back(tpot_ms(r));
    }
  }
  for (size_t p = 0; p < n; ++p) {
    pools[p].prefix_cache_reuse =
        queries[p] > 0 ? static_cast<double>(hits[p]) / static_cast<double>(queries[p]) : 0.0;
    pools[p].ttft_ms = percentiles(std::move(ttft[p]));
    pools[p].tpot_ms = percentiles(std::move(tpot[p]));
    pools[p].e2e_ms = percentiles(std::move(e2e[p]));
  }
  return pools;
}

std::vector<TenantSummary> summarize_tenants(const std::vector<RequestRecord>& records) {
  struct Figures {
    TenantSummary summary;
    std::vector<double> ttft, tpot, e2e;
  };
  std::map<std::string, Figures> by;
  bool any = false;
  for (const auto& r : records) {
    if (r.arrival < 0 || !r.measured) continue;
    any = any || !r.tenant.empty();
    Figures& f = by[r.tenant];
    ++f.summary.requests;
    if (!r.done) {
      ++f.summary.unfinished;
    } else if (r.outcome != Outcome::kOk) {
      ++f.summary.failed;
    } else {
      ++f.summary.completed;
      const RequestLatencies l = latencies_of(r);
      for (const auto& [value, list] :
           {std::pair{l.ttft_ms, &f.ttft}, std::pair{l.tpot_ms, &f.tpot},
            std::pair{l.e2e_ms, &f.e2e}}) {
        if (!std::isnan(value)) list->push_back(value);
      }
    }
  }
  std::vector<TenantSummary> out;
  if (!any) return out;
  for (auto& [tenant, f] : by) {
    f.summary.tenant = tenant;
    f.summary.ttft_ms = percentiles(std::move(f.ttft));
    f.summary.tpot_ms = percentiles(std::move(f.tpot));
    f.summary.e2e_ms = percentiles(std::move(f.e2e));
    out.push_back(std::move(f.summary));
  }
  return out;
}

}  // namespace fleetsim
