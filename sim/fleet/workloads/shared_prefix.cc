// Prefix-sharing traffic, two workload types over one generator:
//  - shared_prefix: many users behind a few long shared prompts (a system prompt, a document, a
//    few-shot preamble): G groups, each with its own prefix; each request picks a group (uniform
//    or Zipf popularity) and a user in it, and sends the group's prefix plus a question of its
//    own. The SGLang/RadixAttention "generated-shared-prefix" benchmark has this shape
//    (sgl-project/sglang : python/sglang/bench_serving.py,
//    sample_generated_shared_prefix_requests).
//  - prefix_burst: bursts of independent single-shot requests that share one prefix (a document
//    fanned out to many questions, a batch job's template), arriving together or spread over a
//    few milliseconds; each burst brings a fresh prefix or one from a small pool.
// Arrivals (of requests or of bursts) come from the open-loop arrival process.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "models/conversation.h"
#include "sim/distribution.h"
#include "sim/errors.h"
#include "sim/fleet/workloads/workload_util.h"

namespace fleetsim {
namespace {

constexpr std::uint64_t kPrefix = 111;
constexpr std::uint64_t kQuestion = 112;
constexpr std::uint64_t kOutput = 113;
// Most requests one burst may bring: far beyond any load test, and low enough that a typo does
// not schedule (and allocate) billions of requests at one instant.
constexpr std::int32_t kMaxBurst = 1'000'000;

struct PrefixConfig {
  bool bursts = false;
  std::int64_t groups = 0;  // shared_prefix: groups; prefix_burst: pool size (0 = fresh prefixes)
  std::int64_t users_per_group = 1;
  std::vector<double> popularity;  // cumulative weights over groups (shared_prefix)
  DistributionPtr burst_size;
  TimeNs burst_spread = 0;
};

class PrefixSharing : public Workload {
 public:
  PrefixSharing(const Params& p, const WorkloadContext& ctx, PrefixConfig config)
      : ctx_(ctx),
        config_(std::move(config)),
        arrivals_(arrival_process_from(p)),
        max_requests_(p.get_int("max_requests")),
        duration_s_(p.get_double("duration_s")),
        prefix_(p.get_distribution_ptr("prefix_tokens")),
        question_(p.get_distribution_ptr("question_tokens")),
        output_(p.get_distribution_ptr("output_tokens")),
        tagger_(p, ctx.seed),
        arrival_rng_(make_rng(ctx.seed, "workload/arrivals")),
        pick_rng_(make_rng(ctx.seed, "workload/pick")),
        length_rng_(make_rng(ctx.seed, "workload/lengths")) {
    if (max_requests_ == 0 && duration_s_ == 0) {
      throw ScenarioError("workload: needs max_requests or duration_s (with both 0 it never ends)");
    }
    // The shared prefix may be empty; each request asks something and generates a token.
    require_tokens(*prefix_, "workload.prefix_tokens", 0);
    require_tokens(*question_, "workload.question_tokens", 1);
    require_tokens(*output_, "workload.output_tokens", 1);
    if (config_.bursts) {
      require_range(*config_.burst_size, "workload.burst_size", 1, kMaxBurst, "requests per burst");
    }
  }

  void start() override { schedule_after(0.0); }
  void on_complete(const Request&, Outcome) override {}
  std::optional<double> expected_requests(double horizon_s) const override {
    const double per_arrival = config_.bursts ? config_.burst_size->mean() : 1.0;
    return expected_open_loop_requests(arrivals_, per_arrival, max_requests_, duration_s_,
                                       horizon_s);
  }

 private:
  bool done() const { return max_requests_ > 0 && planned_ >= max_requests_; }

  void schedule_after(double now_s) {
    if (done()) return;
    const std::optional<double> t = arrivals_.next(now_s, arrival_rng_);
    if (!t || (duration_s_ > 0 && *t >= duration_s_)) return;
    ctx_.loop->schedule_at(sec_to_ns(*t), [this, at = *t] { arrive(at); });
  }

  // The prefix segment of group (or pool slot, or burst) `key`: its length is drawn once, from a
  // stream of its own, so it does not depend on when the group is first used.
  Segment prefix(std::uint64_t key, std::uint64_t kind) {
    auto it = prefixes_.find({key, kind});
    if (it == prefixes_.end()) {
      Rng rng = make_rng(ctx_.seed,
                         "workload/prefix/" + std::to_string(kind) + "/" + std::to_string(key));
      const Segment s{content_id(kPrefix, key, kind), sample_tokens(*prefix_, rng, 0)};
      it = prefixes_.emplace(std::make_pair(key, kind), s).first;
    }
    return it->second;
  }

  void arrive(double at_s) {
    if (!config_.bursts) {
      const double x =
          std::uniform_real_distribution<double>(0, config_.popularity.back())(pick_rng_);
      const auto g = static_cast<std::int64_t>(
          std::upper_bound(config_.popularity.begin(), config_.popularity.end(), x) -
          config_.popularity.begin());
      const std::int64_t group = std::min(g, config_.groups - 1);
      const std::int64_t user =
          std::uniform_int_distribution<std::int64_t>(0, config_.users_per_group - 1)(pick_rng_);
      ++planned_;
      send(prefix(static_cast<std::uint64_t>(group), 0),
           "group-" + std::to_string(group) + "/user-" + std::to_string(user));
    } else {
      const std::int64_t burst = bursts_++;
      const Segment pre =
          config_.groups > 0
              ? prefix(static_cast<std::uint64_t>(std::uniform_int_distribution<std::int64_t>(
                           0, config_.groups - 1)(pick_rng_)),
                       0)
              : prefix(static_cast<std::uint64_t>(burst), 1);
      std::int32_t n = sample_int(*config_.burst_size, length_rng_, 1, kMaxBurst);
      if (max_requests_ > 0) {
        n = static_cast<std::int32_t>(std::min<std::int64_t>(n, max_requests_ - planned_));
      }
      std::vector<TimeNs> offsets(static_cast<std::size_t>(n), 0);
      for (auto& o : offsets) {
        o = config_.burst_spread > 0
                ? std::uniform_int_distribution<TimeNs>(0, config_.burst_spread)(pick_rng_)
                : 0;
      }
      std::sort(offsets.begin(), offsets.end());
      for (std::int32_t k = 0; k < n; ++k) {
        ++planned_;
        const std::string session = "burst-" + std::to_string(burst) + "/req-" + std::to_string(k);
        ctx_.loop->schedule_in(offsets[static_cast<std::size_t>(k)],
                               [this, pre, session] { send(pre, session); });
      }
    }
    schedule_after(at_s);
  }

  void send(const Segment& pre, const std::string& session) {
    const auto i = static_cast<std::uint64_t>(sent_++);
    Request r;
    const std::int32_t q = sample_tokens(*question_, length_rng_);
    r.output_tokens = sample_tokens(*output_, length_rng_);
    r.prompt = {pre, Segment{content_id(kQuestion, i, 0), q}};
    if (pre.tokens == 0) r.prompt.erase(r.prompt.begin());
    r.prompt_tokens = pre.tokens + q;
    r.session = session;
    r.output_content_id = content_id(kOutput, i, 0);
    tagger_.tag(r, ctx_.loop->now());
    ctx_.submit(std::move(r));
  }

  WorkloadContext ctx_;
  PrefixConfig config_;
  ArrivalProcess arrivals_;
  std::int64_t max_requests_;
  double duration_s_;
  DistributionPtr prefix_;
  DistributionPtr question_;
  DistributionPtr output_;
  RequestTagger tagger_;
  Rng arrival_rng_;
  Rng pick_rng_;
  Rng length_rng_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Segment> prefixes_;
  std::int64_t planned_ = 0;  // requests scheduled (bursts schedule theirs ahead)
  std::int64_t sent_ = 0;
  std::int64_t bursts_ = 0;
};

ParamSpec& add_common(ParamSpec& spec) {
  spec.integer("max_requests", 1000, "stop after this many requests (0 = no cap)", 0)
      .real("duration_s", 0, "stop arrivals at this time (0 = no limit)", 0)
      .distribution("question_tokens", constant_distribution(200),
                    "tokens of each request's own part after the shared prefix")
      .distribution("output_tokens", constant_distribution(100),
                    "tokens each request generates (max_tokens reached)");
  return add_tag_params(spec);
}

ParamSpec shared_prefix_spec() {
  ParamSpec spec;
  spec.integer("groups", 8, "number of shared prefixes (groups of users)", 1, 1e7)
      .integer("users_per_group", 16, "users in each group (their session id: group-G/user-U)", 1)
      .distribution("prefix_tokens", constant_distribution(4000),
                    "length of each group's shared prefix (drawn once per group)")
      .text("group_popularity", "uniform",
            "how requests pick a group: uniform, or zipf (group k has weight 1/(k+1)^zipf_s)",
            {"uniform", "zipf"})
      .real("zipf_s", 1.0, "exponent of the Zipf popularity", 0, 10);
  add_arrival_params(spec, 5.0, "requests");
  return add_common(spec);
}

ParamSpec prefix_burst_spec() {
  ParamSpec spec;
  spec.distribution("burst_size", constant_distribution(32), "requests in each burst")
      .real("burst_spread_ms", 0,
            "the requests of a burst arrive uniformly over this time (0 = all at once)", 0)
      .distribution("prefix_tokens", constant_distribution(8000),
                    "length of the prefix a burst shares")
      .integer("prefix_pool", 0,
               "0 = every burst brings a fresh prefix; N = each burst shares one of N prefixes, "
               "picked at random",
               0, 1e7);
  add_arrival_params(spec, 0.5, "bursts");
  return add_common(spec);
}

PrefixConfig shared_prefix_config(const Params& p) {
  PrefixConfig c;
  c.groups = p.get_int("groups");
  c.users_per_group = p.get_int("users_per_group");
  const bool zipf = p.get_string("group_popularity") == "zipf";
  double total = 0;
  for (std::int64_t g = 0; g < c.groups; ++g) {
    total += zipf ? 1.0 / std::pow(static_cast<double>(g + 1), p.get_double("zipf_s")) : 1.0;
    c.popularity.push_back(total);
  }
  return c;
}

PrefixConfig prefix_burst_config(const Params& p) {
  PrefixConfig c;
  c.bursts = true;
  c.groups = p.get_int("prefix_pool");
  c.burst_size = p.get_distribution_ptr("burst_size");
  c.burst_spread = ms_to_ns(p.get_double("burst_spread_ms"));
  return c;
}

const WorkloadRegistrar kSharedPrefix(
    "shared_prefix",
    "G groups of users behind long shared prefixes (system prompt, document); open-loop requests "
    "of prefix + own question",
    shared_prefix_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<PrefixSharing>(p, ctx, shared_prefix_config(p));
    });

const WorkloadRegistrar kPrefixBurst(
    "prefix_burst",
    "bursts of independent single-shot requests sharing one prefix, arriving together",
    prefix_burst_spec(), [](const Params& p, const WorkloadContext& ctx) {
      return std::make_unique<PrefixSharing>(p, ctx, prefix_burst_config(p));
    });

}  // namespace
}  // namespace fleetsim
