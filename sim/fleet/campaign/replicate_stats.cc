#include "sim/fleet/campaign/replicate_stats.h"

#include <Eigen/Dense>
#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <numeric>

#include "sim/errors.h"
#include "sim/fleet/metrics.h"

namespace fleetsim {
namespace {

Eigen::Map<const Eigen::ArrayXd> as_array(const std::vector<double>& x) {
  return {x.data(), static_cast<Eigen::Index>(x.size())};
}

double mean_of(const std::vector<double>& x) { return as_array(x).mean(); }

}  // namespace

Spread spread(const std::vector<double>& x) {
  Spread s;
  s.n = static_cast<int>(x.size());
  if (x.empty()) return s;
  const auto a = as_array(x);
  s.mean = a.mean();
  if (s.n > 1) s.sd = std::sqrt((a - s.mean).square().sum() / (s.n - 1));
  if (s.sd > 0) s.cv_pct = std::abs(s.mean) > 0 ? 100.0 * s.sd / std::abs(s.mean) : INFINITY;
  return s;
}

Interval bca_interval(const std::vector<double>& x, double confidence, int resamples, Rng& rng) {
  if (x.size() < 2) throw InternalError("bca_interval: needs at least 2 values");
  const double est = mean_of(x);
  const auto n = x.size();
  std::uniform_int_distribution<size_t> pick(0, n - 1);
  std::vector<double> means(static_cast<size_t>(resamples));
  double below = 0;
  for (auto& m : means) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) sum += x[pick(rng)];
    m = sum / static_cast<double>(n);
    // A tie counts half, so a sample whose resamples often equal the estimate is not biased.
    below += m < est ? 1.0 : (m == est ? 0.5 : 0.0);
  }
  std::sort(means.begin(), means.end());
  if (means.front() == means.back()) return {est, est};

  const boost::math::normal unit;
  const double share = std::clamp(below / resamples, 0.5 / resamples, 1.0 - 0.5 / resamples);
  const double z0 = boost::math::quantile(unit, share);
  // Jackknife means: each leaves one value out.
  const double total = est * static_cast<double>(n);
  double num = 0, den = 0;
  for (double xi : x) {
    const double d = (total - xi) / static_cast<double>(n - 1) - est;
    num -= d * d * d;
    den += d * d;
  }
  const double accel = den > 0 ? num / (6.0 * std::pow(den, 1.5)) : 0.0;
  auto adjusted = [&](double tail) {
    const double z = boost::math::quantile(unit, tail);
    return boost::math::cdf(unit, z0 + (z0 + z) / (1.0 - accel * (z0 + z)));
  };
  const double alpha = (1.0 - confidence) / 2.0;
  return {quantile_sorted(means, adjusted(alpha)), quantile_sorted(means, adjusted(1.0 - alpha))};
}

Tost paired_tost(const std::vector<double>& a, const std::vector<double>& b, double margin,
                 double alpha) {
  if (a.size() != b.size() || a.size() < 2) {
    throw InternalError("paired_tost: needs two samples of the same size, at least 2");
  }
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  const Spread s = spread(d);
  Tost t;
  t.mean_diff = s.mean;
  t.se = s.sd / std::sqrt(static_cast<double>(s.n));
  if (t.se == 0) {
    // Identical pairs are equivalent under any margin, a zero one included.
    t.equivalent = std::abs(t.mean_diff) < margin || t.mean_diff == 0;
    t.p_value = t.equivalent ? 0.0 : 1.0;
    return t;
  }
  const boost::math::students_t dist(s.n - 1);
  const double p_low =
      boost::math::cdf(boost::math::complement(dist, (t.mean_diff + margin) / t.se));
  const double p_high = boost::math::cdf(dist, (t.mean_diff - margin) / t.se);
  t.p_value = std::max(p_low, p_high);
  t.equivalent = t.p_value < alpha;
  return t;
}

double paired_t_p(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  const Spread s = spread(d);
  const double se = s.sd / std::sqrt(static_cast<double>(s.n));
  if (se == 0) return s.mean == 0 ? 1.0 : 0.0;
  const boost::math::students_t dist(s.n - 1);
  return 2 * boost::math::cdf(boost::math::complement(dist, std::abs(s.mean) / se));
}

std::vector<double> holm_adjusted(const std::vector<double>& p) {
  std::vector<size_t> order(p.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  std::vector<double> out(p.size());
  double running = 0;
  const auto m = static_cast<double>(p.size());
  for (size_t rank = 0; rank < order.size(); ++rank) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(rank)) * p[order[rank]]));
    out[order[rank]] = running;
  }
  return out;
}

int replicates_needed(double sd, double gap, double alpha, int cap) {
  if (gap <= 0) return cap;
  for (int n = 2; n < cap; ++n) {
    const boost::math::students_t dist(n - 1);
    if (boost::math::quantile(dist, 1.0 - alpha) * sd / std::sqrt(n) < gap) return n;
  }
  return cap;
}

}  // namespace fleetsim
