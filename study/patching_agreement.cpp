#include "study/patching_agreement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "autograd/base/generator.h"

namespace tapegrad::study {

namespace {

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = double(x.size());
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double mean_y = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double cov = 0, var_x = 0, var_y = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    cov += (x[i] - mean_x) * (y[i] - mean_y);
    var_x += (x[i] - mean_x) * (x[i] - mean_x);
    var_y += (y[i] - mean_y) * (y[i] - mean_y);
  }
  if (var_x == 0 || var_y == 0) return std::numeric_limits<double>::quiet_NaN();
  return cov / std::sqrt(var_x * var_y);
}

// 1-based ranks, tied values at their mean rank.
std::vector<double> ranks(const std::vector<double>& x) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return x[a] < x[b]; });
  std::vector<double> rank(x.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]]) ++j;
    for (std::size_t t = i; t <= j; ++t) rank[order[t]] = (double(i) + double(j)) / 2 + 1;
    i = j + 1;
  }
  return rank;
}

// The indices of the k entries largest in absolute value, earlier first among ties.
std::vector<std::size_t> top_by_magnitude(const std::vector<double>& x, std::size_t k) {
  std::vector<std::size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return std::abs(x[a]) > std::abs(x[b]); });
  order.resize(k);
  return order;
}

}  // namespace

Agreement agreement(const std::vector<double>& estimates, const std::vector<double>& exact, std::size_t k) {
  if (estimates.size() != exact.size()) {
    throw ValueError("agreement: " + std::to_string(estimates.size()) + " estimates for " +
                     std::to_string(exact.size()) + " exact effects");
  }
  if (estimates.size() < 2) throw ValueError("agreement: needs 2 slices or more, got " + std::to_string(estimates.size()));
  if (k == 0) throw ValueError("agreement: k must be at least 1");
  Agreement a;
  a.compared = estimates.size();
  a.pearson = pearson(estimates, exact);
  a.spearman = pearson(ranks(estimates), ranks(exact));
  a.k = std::min(k, estimates.size());
  const std::vector<std::size_t> by_estimate = top_by_magnitude(estimates, a.k), by_exact = top_by_magnitude(exact, a.k);
  std::size_t found = 0;
  for (std::size_t i : by_exact) found += std::count(by_estimate.begin(), by_estimate.end(), i);
  a.top_k_recall = double(found) / double(a.k);
  return a;
}

std::vector<double> exact_effects(const PatchTable& table) {
  std::vector<double> effects;
  for (const PatchedSlice& row : table.rows) effects.push_back(row.metric - table.target_metric);
  return effects;
}

double proportion_upper_bound(std::size_t found, std::size_t trials) {
  if (trials == 0 || found >= trials) return 1;
  // P(X <= found) under Binomial(trials, p) falls as p grows: bisect for the p where it is 5%.
  const auto at_most_found = [&](double p) {
    double term = std::pow(1 - p, double(trials)), sum = term;  // P(X = 0)
    for (std::size_t x = 1; x <= found; ++x) {
      term *= double(trials - x + 1) / double(x) * p / (1 - p);
      sum += term;
    }
    return sum;
  };
  double lo = double(found) / double(trials), hi = 1;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (at_most_found(mid) > 0.05 ? lo : hi) = mid;
  }
  return hi;
}

template <class T>
Verification verify_attribution(nn::Module<T>& model, const RunLoss<T>& run_target, const ActivationCache<T>& source,
                             const AttributionTable& table, const SliceAxes& axes, const EstimateOf& estimate,
                             std::size_t k, std::size_t sample, std::uint64_t seed) {
  std::vector<double> all;
  for (const AttributedSlice& row : table.rows) all.push_back(estimate(row));
  std::vector<std::size_t> chosen = top_by_magnitude(all, std::min(k, all.size()));
  const std::vector<std::size_t> top = chosen;
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) rest.push_back(i);
  Generator gen(seed);
  for (std::size_t i = 0; i < std::min(sample, rest.size()); ++i) {  // a partial Fisher-Yates shuffle
    std::swap(rest[i], rest[std::size_t(gen.randint(std::int64_t(i), std::int64_t(rest.size())))]);
    chosen.push_back(rest[i]);
  }
  std::sort(chosen.begin(), chosen.end());
  std::vector<double> estimates, exact;
  for (std::size_t i : chosen) {
    const AttributedSlice& row = table.rows[i];
    estimates.push_back(all[i]);
    exact.push_back(patch_slice(model, run_target, source, row.point, axes, row.index) - table.target_metric);
  }
  Verification v;
  v.agreement = agreement(estimates, exact, k);
  std::vector<double> magnitudes;
  for (double e : exact) magnitudes.push_back(std::abs(e));
  std::vector<double> sorted = magnitudes;
  std::sort(sorted.rbegin(), sorted.rend());
  const double cut = sorted[std::min(k, sorted.size()) - 1];  // the k-th largest |exact| patched
  for (std::size_t j = 0; j < chosen.size(); ++j) {
    if (std::find(top.begin(), top.end(), chosen[j]) != top.end()) continue;
    ++v.sampled;
    v.sampled_false_negatives += magnitudes[j] >= cut;
  }
  v.false_negative_share_bound = proportion_upper_bound(v.sampled_false_negatives, v.sampled);
  return v;
}

#define TAPEGRAD_INSTANTIATE_VERIFY_ATTRIBUTION(T)                                                            \
  template Verification verify_attribution(nn::Module<T>&, const RunLoss<T>&, const ActivationCache<T>&,        \
                                        const AttributionTable&, const SliceAxes&, const EstimateOf&, std::size_t, \
                                        std::size_t, std::uint64_t);
TAPEGRAD_INSTANTIATE_VERIFY_ATTRIBUTION(float)
TAPEGRAD_INSTANTIATE_VERIFY_ATTRIBUTION(double)
#undef TAPEGRAD_INSTANTIATE_VERIFY_ATTRIBUTION

}  // namespace tapegrad::study
