// Pieces the workload generators and trace replays share: arrival processes with a rate that
// changes over time, categorical mixes for tier and SLO-class hints, the warm-up flag, and a
// replay of a precomputed list of requests.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/request.h"
#include "models/trace_common.h"
#include "sim/fleet/workload.h"
#include "sim/params.h"
#include "sim/rng.h"

namespace fleetsim {

// The longest delay a workload may draw (think time, tool latency): ~31.7 years, the simulated
// clock's reach; a longer one would overflow it.
inline constexpr double kMaxDelayMs = 1e12;

// The most concurrent clients (streams, sessions) a closed-loop workload may run: far past any
// benchmark harness, and each holds state, so a typo of a few zeros is an error, not an
// allocation failure.
inline constexpr double kMaxClients = 1e6;

// A piecewise-linear rate (requests per second) over time: points (t_s, rate), linear between
// points, flat before the first and after the last. With a period, the schedule repeats every
// `period_s` seconds and the last point ramps back to the first's rate at the period's end (a
// daily curve). Written "t:rate, t:rate, ..." (e.g. "0:2, 600:10, 1200:10, 1800:2").
class RateSchedule {
 public:
  RateSchedule() = default;
  // A constant rate.
  explicit RateSchedule(double rate);
  // Throws ScenarioError naming `field` when the text is not a list of increasing times with
  // non-negative rates, or the period does not cover every point.
  static RateSchedule parse(const std::string& text, double period_s, const std::string& field);

  double rate_at(double t_s) const;
  // The time s >= t at which the integral of the rate from t reaches `area` (expected arrivals);
  // nullopt when the rate stays 0 for ever after t.
  std::optional<double> advance(double t_s, double area) const;
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;  // (t_s, rate), increasing t
  double period_s_ = 0;                            // 0 = no repetition
};

// When requests arrive: a renewal process run in "operational time" (the integral of the rate),
// so a time-varying rate changes how often requests come but not how bursty they are.
// Inter-arrivals in operational time have mean 1: exponential (Poisson arrivals), gamma with
// coefficient of variation `cv` (cv > 1 burstier than Poisson, < 1 more regular; shape 1/cv^2),
// or exactly 1 (constant spacing).
class ArrivalProcess {
 public:
  enum class Kind { kPoisson, kGamma, kConstant };
  ArrivalProcess(Kind kind, double cv, RateSchedule schedule);
  // The time of the next arrival after one at `now_s`; nullopt when none will come.
  std::optional<double> next(double now_s, Rng& rng) const;
  double rate_at(double t_s) const { return schedule_.rate_at(t_s); }
  // Arrivals expected in [0, until_s): the rate's integral (midpoint rule, an estimate).
  double expected_arrivals(double until_s) const;

 private:
  Kind kind_;
  double cv_;
  RateSchedule schedule_;
};

// An open-loop generator's expected request count: `per_arrival` requests an arrival until
// max_requests (0: no cap), duration_s (0: none) or the horizon (0: none) ends it; empty when
// nothing bounds it.
std::optional<double> expected_open_loop_requests(const ArrivalProcess& arrivals,
                                                  double per_arrival, std::int64_t max_requests,
                                                  double duration_s, double horizon_s);

// Adds arrival, rate, cv, rate_schedule and schedule_period_s to a spec (`unit` names what
// arrives, e.g. "requests" or "bursts"), and builds the process from them.
ParamSpec& add_arrival_params(ParamSpec& spec, double default_rate, const std::string& unit);
ArrivalProcess arrival_process_from(const Params& p);

// A categorical mix "name:weight, name:weight" (weights need not sum to 1). Empty = no value.
class CategoricalMix {
 public:
  static CategoricalMix parse(const std::string& text, const std::string& field);
  bool empty() const { return names_.empty(); }
  const std::string& sample(Rng& rng) const;
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<double>& weights() const { return weights_; }

 private:
  std::vector<std::string> names_;
  std::vector<double> weights_;
};

// Sets tier and SLO-class hints from the mixes and the measured flag from the warm-up. Each
// generator and trace reader takes these parameters (add_tag_params).
class RequestTagger {
 public:
  RequestTagger(const Params& p, std::uint64_t seed);
  // Fills tier and slo_class where the request has none (a trace's own values win) and clears
  // `measured` for requests sent before the warm-up ends.
  void tag(Request& r, TimeNs now);

 private:
  CategoricalMix tier_;
  CategoricalMix slo_;
  TimeNs warmup_;
  Rng rng_;
};
ParamSpec& add_tag_params(ParamSpec& spec);

// A workload that sends a precomputed list of requests at their arrival times (offsets from the
// start of the run), in order. One pending event at a time, so long traces stay cheap.
class ReplayWorkload : public Workload {
 public:
  ReplayWorkload(const WorkloadContext& ctx, std::vector<Request> requests, RequestTagger tagger);
  void start() override;
  void on_complete(const Request&, Outcome) override {}
  std::optional<double> expected_requests(double horizon_s) const override;
  const std::vector<Request>& requests() const { return requests_; }

 private:
  void send_next();
  WorkloadContext ctx_;
  std::vector<Request> requests_;
  RequestTagger tagger_;
  std::size_t next_ = 0;
};

// The replay options every trace reader takes (file, time_scale, window, cap, loop,
// skip_bad_lines) plus the tag parameters.
ParamSpec trace_replay_spec(const std::string& file_help);
ReplayOptions replay_options_from(const Params& p);
// The read options of `p` (skip_bad_lines, and start_s, end_s and max_requests as the read
// window), for the reader of any trace the replay options then apply to: reading stops where
// the replay would stop taking requests, and the replay's result is the same.
void set_read_options(TraceReadOptions& o, const Params& p);
// Warns (spdlog) about skipped lines, with the count and the first one's message.
void report_skipped_lines(const Trace& trace);
// The replay workload of a trace as read: warns about skipped lines, applies the replay options
// of `p`, and fails (ScenarioError) when the window leaves no request.
std::unique_ptr<Workload> make_trace_replay(const Params& p, const WorkloadContext& ctx,
                                            const Trace& trace);

}  // namespace fleetsim
