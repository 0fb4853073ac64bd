// Statistics over replicate runs (one figure per seed): the spread, a bias-corrected and
// accelerated bootstrap interval of the mean, and a paired equivalence test. What a benchmark
// campaign needs to say whether a difference between two arms is real, absent, or undecided.
#pragma once

#include <vector>

#include "sim/rng.h"

namespace fleetsim {

struct Spread {
  int n = 0;
  double mean = 0;
  double sd = 0;      // sample standard deviation (n - 1)
  double cv_pct = 0;  // 100 sd / |mean|; 0 when every value is 0
};

Spread spread(const std::vector<double>& x);

struct Interval {
  double low = 0;
  double high = 0;
};

// BCa bootstrap interval of the mean (Efron, "Better bootstrap confidence intervals", JASA 1987;
// Efron & Tibshirani 1993, ch. 14): the percentile interval of `resamples` resampled means,
// shifted by the bias z0 (the share of resampled means below the estimate) and stretched by
// the acceleration a (the jackknife skewness of the mean). A sample with no spread gives the
// point [mean, mean]. `x` needs at least 2 values.
Interval bca_interval(const std::vector<double>& x, double confidence, int resamples, Rng& rng);

// Two one-sided t-tests (Schuirmann 1987) on paired differences d_i = b_i - a_i: equivalent
// when the mean difference is shown inside (-margin, +margin) at level alpha, i.e. when the
// (1 - 2 alpha) t interval of the mean difference lies inside the margin. Identical pairs are
// equivalent whatever the margin.
struct Tost {
  double mean_diff = 0;
  double se = 0;       // standard error of the mean difference
  double p_value = 1;  // the larger of the two one-sided p values
  bool equivalent = false;
};

Tost paired_tost(const std::vector<double>& a, const std::vector<double>& b, double margin,
                 double alpha);

// Two-sided p value of the paired t test that the mean of d_i = b_i - a_i is 0 (Student 1908);
// identical pairs give 0 when their difference is not 0 and 1 when it is.
double paired_t_p(const std::vector<double>& a, const std::vector<double>& b);

// Holm's step-down adjustment of p values for a family of tests (Holm, "A simple sequentially
// rejective multiple test procedure", Scand. J. Statist. 1979): sorted ascending, the i-th of m
// becomes max over j <= i of min(1, (m - j + 1) p_(j)); a test rejects at level alpha when its
// adjusted p is below alpha, which holds the family-wise error rate at alpha. In input order.
std::vector<double> holm_adjusted(const std::vector<double>& p);

// Replicates a paired comparison needs before its (1 - 2 alpha) t interval can clear `gap` (the
// distance it must shrink below), given the differences' sd: the smallest n with
// t(1 - alpha, n - 1) sd / sqrt(n) < gap; `cap` when even that many would not.
int replicates_needed(double sd, double gap, double alpha, int cap);

}  // namespace fleetsim
