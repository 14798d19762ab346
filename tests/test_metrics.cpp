// The metrics actor's histograms against exact percentiles of known samples: every quantile
// within its 1 % bucket above the true value, from a microsecond to hours.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "actors/metrics_types.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

// The nearest-rank q-quantile of `sorted` (the histogram's rule: the smallest value with at least
// q of the samples at or below it).
double exact_quantile(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::max<size_t>(rank, 1) - 1];
}

void check_quantiles(const std::vector<double>& samples) {
  latency_histogram h;
  for (double x : samples) h.add(x);
  std::vector<double> sorted = samples;
  std::ranges::sort(sorted);
  for (double q : {0.01, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0}) {
    const double exact = exact_quantile(sorted, q);
    CAPTURE(q, exact);
    CHECK(h.quantile(q) >= exact);
    CHECK(h.quantile(q) <= exact * 1.0101 + 1e-3);  // its bucket's upper bound, or 1 us
  }
  CHECK(h.max() == sorted.back());
  CHECK(h.count() == samples.size());
}

}  // namespace

TEST_CASE("histogram quantiles are the exact ones within 1 %, from a microsecond to hours", "[metrics]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(-3, 7);  // 1 us .. 2.8 h, log-uniform
  std::vector<double> samples(20000);
  for (double& x : samples) x = std::pow(10.0, exponent(rng));
  check_quantiles(samples);
}

TEST_CASE("a long tail of slow steps reads as slow at the high quantiles", "[metrics]") {
  // The figures `stats` once reported as p50 = p90 = p99 = 151.8 ms with a mean of 1455 ms.
  std::vector<double> steps(900, 40.0);
  steps.insert(steps.end(), 90, 1500.0);
  steps.insert(steps.end(), 10, 15343.0);
  check_quantiles(steps);
  latency_histogram h;
  for (double x : steps) h.add(x);
  CHECK(h.quantile(0.99) > 1500);
  CHECK(h.quantile(1.0) == 15343.0);
}

TEST_CASE("beyond the last bucket a quantile is the largest value seen", "[metrics]") {
  latency_histogram h;
  h.add(5.0);
  h.add(1e12);  // 31 years
  CHECK(h.quantile(0.5) == Approx(5.0).epsilon(0.011));
  CHECK(h.quantile(1.0) == 1e12);
}

TEST_CASE("cumulative counts at a bound are the exact ones, or include values within 1 % above it",
          "[metrics]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> exponent(-1, 5);  // 0.1 ms .. 100 s
  std::vector<double> samples(5000);
  latency_histogram h;
  for (double& x : samples) h.add(x = std::pow(10.0, exponent(rng)));
  const latency_summary s = summarize(h, latency_bounds_ms);
  REQUIRE(s.at_most.size() == latency_bounds_ms.size());
  double sum = 0;
  for (double x : samples) sum += x;
  CHECK(s.sum == Approx(sum));
  for (size_t i = 0; i < latency_bounds_ms.size(); ++i) {
    const double le = latency_bounds_ms[i];
    const auto at_most =
        static_cast<uint64_t>(std::ranges::count_if(samples, [&](double x) { return x <= le; }));
    const auto slack =
        static_cast<uint64_t>(std::ranges::count_if(samples, [&](double x) { return x <= le * 1.0101; }));
    CAPTURE(le);
    CHECK(s.at_most[i] >= at_most);
    CHECK(s.at_most[i] <= slack);
    if (i > 0) CHECK(s.at_most[i] >= s.at_most[i - 1]);
  }
}
