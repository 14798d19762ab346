#include "bench/household/capacity.hpp"

#include <cmath>

namespace hearth::household {

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
  out.capacity = lo;
  out.bracketed = hi > 0;
  return out;
}

}  // namespace hearth::household
