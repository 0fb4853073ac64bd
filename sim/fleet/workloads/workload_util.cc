#include "sim/fleet/workloads/workload_util.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "sim/errors.h"

namespace fleetsim {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// The lowest positive arrival rate: one arrival every ~11.6 days. A mean gap of 1/rate must stay
// far inside the simulated clock's ~31.7 years, with room for a gap many times the mean (a
// Poisson or gamma tail); a rate of 1e-320 once made a gap that overflowed the clock.
constexpr double kMinRate = 1e-6;
// The highest: a mean gap of 1 us. Gaps are whole nanoseconds, so a rate near 1e9 would round
// them to 0 and the clock would stop while arrivals pile up at one instant.
constexpr double kMaxRate = 1e6;

}  // namespace

RateSchedule::RateSchedule(double rate) : points_{{0.0, rate}} {}

RateSchedule RateSchedule::parse(const std::string& text, double period_s,
                                 const std::string& field) {
  RateSchedule s;
  s.period_s_ = period_s;
  auto fail = [&](const std::string& why) {
    throw ScenarioError(field + ": " + why + " in '" + text +
                        "'; expected 'time_s:rate, time_s:rate, ...' with increasing times, e.g. "
                        "'0:2, 600:10, 1200:2'");
  };
  for (const std::string& item : split_trimmed(text, ',')) {
    const auto parts = split_trimmed(item, ':');
    double t = 0, r = 0;
    if (parts.size() != 2 || !parse_finite(parts[0], t) || !parse_finite(parts[1], r)) {
      fail("'" + item + "' is not time_s:rate");
    }
    if (t < 0 || r < 0) fail("negative time or rate '" + item + "'");
    if (r > kMaxRate) {
      std::ostringstream os;
      os << "rate of '" << item << "' is above " << kMaxRate << " per second";
      fail(os.str());
    }
    if (r > 0 && r < kMinRate) {
      std::ostringstream os;
      os << "rate of '" << item << "' is below " << kMinRate
         << " per second (one arrival every ~11.6 days; 0 stops the arrivals)";
      fail(os.str());
    }
    if (!s.points_.empty() && t <= s.points_.back().first) {
      fail("times must increase at '" + item + "'");
    }
    s.points_.emplace_back(t, r);
  }
  if (s.points_.empty()) fail("no points");
  if (std::all_of(s.points_.begin(), s.points_.end(),
                  [](const auto& p) { return p.second == 0; })) {
    fail("every rate is 0, so no request would ever arrive");
  }
  if (period_s > 0 && s.points_.back().first >= period_s) {
    fail("the last point's time must lie inside schedule_period_s (" + std::to_string(period_s) +
         " s)");
  }
  return s;
}

namespace {

// The linear piece of the schedule that holds time t: [a, b) with rates ra at a and rb at b.
struct Piece {
  double a, b, ra, rb;
  double rate(double t) const {
    return b == kInf || b == a ? ra : ra + (rb - ra) * (t - a) / (b - a);
  }
  double slope() const { return b == kInf || b == a ? 0.0 : (rb - ra) / (b - a); }
};

Piece piece_at(const std::vector<std::pair<double, double>>& pts, double period, double t) {
  if (period > 0) {
    // One period, wrapped: the last point ramps to the first point's rate one period later.
    const double base = std::floor(t / period) * period;
    const double tau = t - base;
    std::vector<std::pair<double, double>> ext;
    ext.reserve(pts.size() + 2);
    ext.emplace_back(pts.back().first - period, pts.back().second);
    ext.insert(ext.end(), pts.begin(), pts.end());
    ext.emplace_back(pts.front().first + period, pts.front().second);
    auto it = std::upper_bound(ext.begin(), ext.end(), tau,
                               [](double x, const auto& p) { return x < p.first; });
    const auto i = static_cast<std::size_t>(it - ext.begin()) - 1;
    return {base + ext[i].first, base + ext[i + 1].first, ext[i].second, ext[i + 1].second};
  }
  if (t < pts.front().first) return {t, pts.front().first, pts.front().second, pts.front().second};
  auto it = std::upper_bound(pts.begin(), pts.end(), t,
                             [](double x, const auto& p) { return x < p.first; });
  const auto i = static_cast<std::size_t>(it - pts.begin()) - 1;
  if (i + 1 == pts.size()) return {pts[i].first, kInf, pts[i].second, pts[i].second};
  return {pts[i].first, pts[i + 1].first, pts[i].second, pts[i + 1].second};
}

}  // namespace

double RateSchedule::rate_at(double t_s) const {
  if (points_.empty()) return 0;
  return piece_at(points_, period_s_, t_s).rate(t_s);
}

std::optional<double> RateSchedule::advance(double t_s, double area) const {
  if (points_.empty()) return std::nullopt;
  if (period_s_ > 0) {
    double per_period = 0;
    for (double t = 0; t < period_s_;) {
      const Piece p = piece_at(points_, period_s_, t);
      const double end = std::min(p.b, period_s_);
      per_period += (p.rate(t) + p.rate(end)) / 2 * (end - t);
      t = end > t ? end : std::nextafter(t, kInf);
    }
    if (per_period <= 0) return std::nullopt;
  }
  double t = t_s;
  double left = area;
  // Each pass crosses one linear piece; a bound keeps a pathological schedule from spinning.
  for (int pass = 0; pass < 10'000'000; ++pass) {
    const Piece p = piece_at(points_, period_s_, t);
    const double r = std::max(0.0, p.rate(t));
    const double k = p.slope();
    if (p.b == kInf) {
      if (r <= 0) return std::nullopt;
      return t + left / r;
    }
    const double d_end = p.b - t;
    if (d_end <= 0) {
      // Rounding in the period wrap put t on a piece's end: step past it.
      t = std::nextafter(t, kInf);
      continue;
    }
    const double piece_area = r * d_end + k * d_end * d_end / 2;
    if (piece_area >= left) {
      // r d + k d^2 / 2 = left, in the form that stays exact when k is 0 or r is 0.
      const double root = std::sqrt(std::max(0.0, r * r + 2 * k * left));
      const double denom = r + root;
      return denom > 0 ? t + std::min(d_end, 2 * left / denom) : t;
    }
    left -= piece_area;
    t = p.b;
  }
  return std::nullopt;
}

ArrivalProcess::ArrivalProcess(Kind kind, double cv, RateSchedule schedule)
    : kind_(kind), cv_(cv), schedule_(std::move(schedule)) {}

double ArrivalProcess::expected_arrivals(double until_s) const {
  constexpr int kSteps = 4096;
  const double dt = until_s / kSteps;
  double sum = 0;
  for (int i = 0; i < kSteps; ++i) sum += rate_at((i + 0.5) * dt);
  return sum * dt;
}

std::optional<double> expected_open_loop_requests(const ArrivalProcess& arrivals,
                                                  double per_arrival, std::int64_t max_requests,
                                                  double duration_s, double horizon_s) {
  double until_s = duration_s;
  if (horizon_s > 0) until_s = until_s > 0 ? std::min(until_s, horizon_s) : horizon_s;
  const double cap = max_requests > 0 ? static_cast<double>(max_requests) : HUGE_VAL;
  if (until_s <= 0) return max_requests > 0 ? std::optional<double>(cap) : std::nullopt;
  return std::min(cap, per_arrival * arrivals.expected_arrivals(until_s));
}

std::optional<double> ArrivalProcess::next(double now_s, Rng& rng) const {
  double x = 1.0;
  switch (kind_) {
    case Kind::kPoisson:
      x = std::exponential_distribution<double>(1.0)(rng);
      break;
    case Kind::kGamma: {
      const double shape = 1.0 / (cv_ * cv_);
      x = std::gamma_distribution<double>(shape, 1.0 / shape)(rng);
      break;
    }
    case Kind::kConstant:
      break;
  }
  return schedule_.advance(now_s, x);
}

ParamSpec& add_arrival_params(ParamSpec& spec, double default_rate, const std::string& unit) {
  return spec
      .text("arrival", "poisson",
            "inter-arrival law: poisson (exponential gaps), gamma (gaps with coefficient of "
            "variation cv: burstier than Poisson when cv > 1), constant (evenly spaced)",
            {"poisson", "gamma", "constant"})
      .real("rate", default_rate, "mean " + unit + " per second (when rate_schedule is empty)",
            kMinRate, kMaxRate)
      .real("cv", 2.0, "gamma only: coefficient of variation of the gaps (1 = Poisson)", 1e-3, 100)
      .text("rate_schedule", "",
            "a rate that changes over time: 'time_s:rate, ...' points, linear between them, flat "
            "before the first and after the last (e.g. steps '0:2, 300:2, 301:8', a ramp "
            "'0:1, 600:20'); empty = the constant 'rate'")
      .real("schedule_period_s", 0,
            "repeat rate_schedule with this period, ramping from the last point back to the first "
            "(86400 = a daily curve); 0 = no repetition",
            0);
}

ArrivalProcess arrival_process_from(const Params& p) {
  const std::string& kind = p.get_string("arrival");
  const ArrivalProcess::Kind k = kind == "gamma"      ? ArrivalProcess::Kind::kGamma
                                 : kind == "constant" ? ArrivalProcess::Kind::kConstant
                                                      : ArrivalProcess::Kind::kPoisson;
  const std::string& text = p.get_string("rate_schedule");
  RateSchedule schedule =
      trim(text).empty()
          ? RateSchedule(p.get_double("rate"))
          : RateSchedule::parse(text, p.get_double("schedule_period_s"), "workload.rate_schedule");
  return ArrivalProcess(k, p.get_double("cv"), std::move(schedule));
}

CategoricalMix CategoricalMix::parse(const std::string& text, const std::string& field) {
  CategoricalMix m;
  if (trim(text).empty()) return m;
  std::set<std::string> seen;
  for (const std::string& item : split_trimmed(text, ',')) {
    const auto colon = item.rfind(':');
    double w = 0;
    const std::string name = colon == std::string::npos ? item : trim(item.substr(0, colon));
    if (colon == std::string::npos || name.empty() ||
        !parse_finite(trim(item.substr(colon + 1)), w) || w <= 0) {
      throw ScenarioError(field + ": '" + item + "' in '" + text +
                          "' is not name:weight with a positive weight; expected e.g. "
                          "'small:0.7, big:0.3'");
    }
    if (!seen.insert(name).second) {
      throw ScenarioError(field + ": '" + name + "' appears twice in '" + text + "'");
    }
    m.names_.push_back(name);
    m.weights_.push_back(w);
  }
  return m;
}

const std::string& CategoricalMix::sample(Rng& rng) const {
  double total = 0;
  for (double w : weights_) total += w;
  double x = std::uniform_real_distribution<double>(0.0, total)(rng);
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (x < weights_[i]) return names_[i];
    x -= weights_[i];
  }
  return names_.back();
}

ParamSpec& add_tag_params(ParamSpec& spec) {
  return spec
      .text("tier_mix", "",
            "tier hint of each request, drawn from 'name:weight, ...' (e.g. 'small:0.7, big:0.3') "
            "for tier routing; empty = no hint")
      .text("slo_class_mix", "",
            "SLO class of each request, drawn from 'name:weight, ...' (e.g. 'interactive:0.8, "
            "batch:0.2'); empty = the default class")
      .real("warmup_s", 0,
            "requests sent before this time are warm-up: they load the fleet but are marked "
            "unmeasured (Request.measured = false) and left out of the summary",
            0);
}

RequestTagger::RequestTagger(const Params& p, std::uint64_t seed)
    : tier_(CategoricalMix::parse(p.get_string("tier_mix"), "workload.tier_mix")),
      slo_(CategoricalMix::parse(p.get_string("slo_class_mix"), "workload.slo_class_mix")),
      warmup_(sec_to_ns(p.get_double("warmup_s"))),
      rng_(make_rng(seed, "workload/tags")) {}

void RequestTagger::tag(Request& r, TimeNs now) {
  // Draw whether or not the request has its own value, so the draws do not depend on the trace.
  if (!tier_.empty()) {
    const std::string& t = tier_.sample(rng_);
    if (r.tier.empty()) r.tier = t;
  }
  if (!slo_.empty()) {
    const std::string& s = slo_.sample(rng_);
    if (r.slo_class.empty()) r.slo_class = s;
  }
  if (now < warmup_) r.measured = false;
}

ReplayWorkload::ReplayWorkload(const WorkloadContext& ctx, std::vector<Request> requests,
                               RequestTagger tagger)
    : ctx_(ctx), requests_(std::move(requests)), tagger_(std::move(tagger)) {}

void ReplayWorkload::start() {
  if (requests_.empty()) return;
  ctx_.loop->schedule_at(requests_.front().arrival, [this] { send_next(); });
}

std::optional<double> ReplayWorkload::expected_requests(double horizon_s) const {
  if (horizon_s <= 0) return static_cast<double>(requests_.size());
  const TimeNs horizon = sec_to_ns(horizon_s);
  const auto before = std::partition_point(requests_.begin(), requests_.end(),
                                           [&](const Request& r) { return r.arrival < horizon; });
  return static_cast<double>(before - requests_.begin());
}

void ReplayWorkload::send_next() {
  Request r = requests_[next_++];
  tagger_.tag(r, ctx_.loop->now());
  ctx_.submit(std::move(r));
  if (next_ < requests_.size()) {
    // Arrivals never go back (readers reject that), so this is never in the past.
    ctx_.loop->schedule_at(std::max(ctx_.loop->now(), requests_[next_].arrival),
                           [this] { send_next(); });
  }
}

ParamSpec trace_replay_spec(const std::string& file_help) {
  ParamSpec spec;
  spec.text("file", "",
            file_help +
                "; a relative path resolves against the scenario file's folder, then the data "
                "folder ($FLEETSIM_DATA_DIR, by default shared/data); given with --set, against "
                "the current directory")
      .real("time_scale", 1.0,
            "multiply the trace's time offsets by this (0.5 = twice as fast, 2 = half the rate)",
            1e-9)
      .real("start_s", 0, "replay only requests at or after this offset into the trace", 0)
      .real("end_s", 0, "replay only requests before this offset (0 = to the end)", 0)
      .integer("max_requests", 0, "send at most this many requests (0 = all)", 0)
      .integer("loop", 1, "play the (windowed) trace this many times back to back", 1, 1e6)
      .boolean("loop_same_content", false,
               "later loops resend the same content (cache hits); false gives each loop fresh "
               "content with the same lengths and timing")
      .boolean("skip_bad_lines", false,
               "skip lines that cannot be read (counted, with a warning) instead of failing");
  return add_tag_params(spec);
}

ReplayOptions replay_options_from(const Params& p) {
  ReplayOptions o;
  o.time_scale = p.get_double("time_scale");
  o.start_s = p.get_double("start_s");
  o.end_s = p.get_double("end_s");
  if (o.end_s > 0 && o.end_s <= o.start_s) {
    throw ScenarioError(
        fmt::format("workload.end_s: {} must be after workload.start_s ({})", o.end_s, o.start_s));
  }
  o.max_requests = p.get_int("max_requests");
  o.loop = static_cast<std::int32_t>(p.get_int("loop"));
  o.loop_same_content = p.get_bool("loop_same_content");
  return o;
}

void set_read_options(TraceReadOptions& o, const Params& p) {
  const ReplayOptions replay = replay_options_from(p);
  o.skip_bad_lines = p.get_bool("skip_bad_lines");
  o.window_start = sec_to_ns(replay.start_s);
  o.window_end = replay.end_s > 0 ? sec_to_ns(replay.end_s) : 0;
  // The cap counts the loop's copies too, but it takes only the first copy's head when it is
  // smaller than the window, and a larger cap is never reached while reading.
  o.max_in_window = replay.max_requests;
}

void report_skipped_lines(const Trace& trace) {
  if (trace.skipped_lines == 0) return;
  spdlog::warn("{}: skipped {} bad line(s) of {}; the first: {}", trace.path, trace.skipped_lines,
               trace.lines_read, trace.first_skipped);
}

std::unique_ptr<Workload> make_trace_replay(const Params& p, const WorkloadContext& ctx,
                                            const Trace& trace) {
  report_skipped_lines(trace);
  const ReplayOptions o = replay_options_from(p);
  std::vector<Request> requests = apply_replay(trace.requests, o);
  if (requests.empty()) {
    std::ostringstream os;
    os << "workload.start_s/end_s: no request of " << trace.path << " in the window [" << o.start_s
       << " s, ";
    if (o.end_s > 0) {
      os << o.end_s << " s)";
    } else {
      os << "end)";
    }
    throw ScenarioError(os.str());
  }
  return std::make_unique<ReplayWorkload>(ctx, std::move(requests), RequestTagger(p, ctx.seed));
}

}  // namespace fleetsim
