// Open-loop arrivals: requests come at the times an arrival process draws (Poisson, gamma with a
// chosen burstiness, or evenly spaced), at a constant rate or one that follows a schedule (steps,
// ramps, a daily curve), whatever the fleet's state, as a load generator in "rate" mode does.
// Each request is single-shot with content of its own; lengths come from distributions.
#include <memory>
#include <optional>

#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

constexpr std::uint64_t kPrompt = 101;
constexpr std::uint64_t kOutput = 102;

class OpenLoop : public Workload {
 public:
  OpenLoop(const Params& p, const WorkloadContext& ctx)
      : ctx_(ctx),
        arrivals_(arrival_process_from(p)),
        max_requests_(p.get_int("max_requests")),
        duration_s_(p.get_double("duration_s")),
        prompt_(p.get_distribution_ptr("prompt_tokens")),
        output_(p.get_distribution_ptr("output_tokens")),
        tagger_(p, ctx.seed),
        arrival_rng_(make_rng(ctx.seed, "workload/arrivals")),
        length_rng_(make_rng(ctx.seed, "workload/lengths")) {
    if (max_requests_ == 0 && duration_s_ == 0) {
      throw ScenarioError(
          "workload: open_loop needs max_requests or duration_s (with both 0 it never ends)");
    }
    require_tokens(*prompt_, "workload.prompt_tokens", 1);
    require_tokens(*output_, "workload.output_tokens", 1);
  }

  void start() override { schedule_after(0.0); }
  void on_complete(const Request&, Outcome) override {}
  std::optional<double> expected_requests(double horizon_s) const override {
    return expected_open_loop_requests(arrivals_, 1.0, max_requests_, duration_s_, horizon_s);
  }

 private:
  void schedule_after(double now_s) {
    const std::optional<double> t = arrivals_.next(now_s, arrival_rng_);
    if (!t || (duration_s_ > 0 && *t >= duration_s_)) return;
    ctx_.loop->schedule_at(sec_to_ns(*t), [this, at = *t] { send(at); });
  }

  void send(double at_s) {
    const auto i = static_cast<std::uint64_t>(sent_++);
    Request r;
    r.prompt_tokens = sample_tokens(*prompt_, length_rng_);
    r.output_tokens = sample_tokens(*output_, length_rng_);
    r.prompt = {Segment{content_id(kPrompt, i, 0), r.prompt_tokens}};
    r.output_content_id = content_id(kOutput, i, 0);
    tagger_.tag(r, ctx_.loop->now());
    ctx_.submit(std::move(r));
    if (max_requests_ > 0 && sent_ >= max_requests_) return;
    schedule_after(at_s);
  }

  WorkloadContext ctx_;
  ArrivalProcess arrivals_;
  std::int64_t max_requests_;
  double duration_s_;
  DistributionPtr prompt_;
  DistributionPtr output_;
  RequestTagger tagger_;
  Rng arrival_rng_;
  Rng length_rng_;
  std::int64_t sent_ = 0;
};

ParamSpec open_loop_spec() {
  ParamSpec spec;
  add_arrival_params(spec, 5.0, "requests");
  spec.integer("max_requests", 1000, "stop after this many requests (0 = no cap)", 0)
      .real("duration_s", 0, "stop sending at this time (0 = no limit)", 0)
      .distribution("prompt_tokens", constant_distribution(1000), "prompt length in tokens")
      .distribution("output_tokens", constant_distribution(200),
                    "tokens each request generates (max_tokens reached)");
  return add_tag_params(spec);
}

const WorkloadRegistrar kRegistrar(
    "open_loop",
    "open-loop arrivals (Poisson, gamma, constant; constant or scheduled rate), single-shot "
    "requests with unique content",
    open_loop_spec(),
    [](const Params& p, const WorkloadContext& ctx) { return std::make_unique<OpenLoop>(p, ctx); });

}  // namespace
}  // namespace fleetsim
