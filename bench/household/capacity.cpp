#include "bench/household/capacity.hpp"

#include <algorithm>
#include <cmath>

namespace hearth::household {

namespace {

//! A run of trials pooled into one point of the non-increasing curve.
struct pooled_point {
  double rate = 0;        // the highest rate of the run
  double first_rate = 0;  // its lowest
  double sum = 0;         // of the run's attainments
  int n = 0;
  double attainment() const { return sum / n; }
};

//! The trials by rate, attainment made non-increasing in it by pooling adjacent violators (a
//! run of trials that rises with the rate becomes their mean, at each of its rates); trials at
//! one rate are one point, their mean.
std::vector<pooled_point> non_increasing(std::vector<trial_point> trials) {
  std::sort(trials.begin(), trials.end(),
            [](const trial_point& a, const trial_point& b) { return a.rate < b.rate; });
  std::vector<pooled_point> curve;
  for (const trial_point& t : trials) {
    curve.push_back({t.rate, t.rate, t.attainment, 1});
    while (curve.size() > 1 && (curve[curve.size() - 2].attainment() <= curve.back().attainment() ||
                                curve[curve.size() - 2].rate == curve.back().first_rate)) {
      const pooled_point top = curve.back();
      curve.pop_back();
      curve.back().rate = top.rate;
      curve.back().sum += top.sum;
      curve.back().n += top.n;
    }
  }
  return curve;
}

}  // namespace

void estimate_capacity(capacity_result& r, double target) {
  const std::vector<pooled_point> curve = non_increasing(r.trials);
  const auto below = std::find_if(curve.begin(), curve.end(),
                                  [&](const pooled_point& p) { return p.attainment() < target; });
  r.bracketed = below != curve.end();
  if (below == curve.begin()) {
    r.capacity = 0;
  } else if (!r.bracketed) {
    r.capacity = curve.empty() ? 0 : curve.back().rate;
  } else {
    // Linear between the last point at or above the target and the first below it.
    const pooled_point& a = *(below - 1);
    const double fa = a.attainment(), fb = below->attainment();
    r.capacity = a.rate + (below->first_rate - a.rate) * (fa - target) / (fa - fb);
  }
}

capacity_result find_capacity(const std::function<double(double rate)>& attainment_at,
                              const search_options& opt) {
  capacity_result out;
  double lo = 0, hi = 0;  // highest pass, lowest fail (0: none yet)
  auto run = [&](double rate) {
    const double a = attainment_at(rate);
    out.trials.push_back({rate, a});
    const bool pass = a >= opt.target;
    if (pass && rate > lo) lo = rate;
    if (!pass && (hi == 0 || rate < hi)) hi = rate;
    return pass;
  };
  auto budget = [&] { return static_cast<int>(out.trials.size()) < opt.max_runs; };
  // 1. Bracket.
  double rate = opt.start;
  if (run(rate)) {
    while (hi == 0 && budget()) run(rate *= 2);
  } else {
    while (lo == 0 && budget() && rate / 2 >= opt.min_rate) run(rate /= 2);
  }
  // 2. Bisect in the middle of the bracket, geometrically (rates span orders of magnitude).
  while (lo > 0 && hi > lo && hi / lo > 1 + opt.resolution && budget()) run(std::sqrt(lo * hi));
  estimate_capacity(out, opt.target);
  return out;
}

}  // namespace hearth::household
