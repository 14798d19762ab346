#pragma once
// The goodput capacity of one configuration: the highest arrival rate at which at least
// `target` of requests meet their SLO. Attainment falls (roughly monotonically) as the rate
// grows, so the search brackets the crossing, then bisects it:
//   1. try `start`; double while it passes, or halve while it fails, until one rate passes and
//      one fails (or `min_rate` fails too: capacity 0; or the run budget ends: a lower bound);
//   2. bisect (geometrically) between the highest pass and the lowest fail until they are
//      within `resolution` of each other (hi / lo <= 1 + resolution) or the budget ends.
// Every trial is kept, for the frontier plot, and all of them make the estimate: their
// attainment made non-increasing in rate (adjacent violators pooled into their mean), the
// capacity is where that curve crosses `target`, linearly between the two points beside the
// crossing. Not the highest passing rate: that moved by a whole bracket with one noisy trial
// near the target, and sat up to a bracket's width below the crossing of a smooth curve.

#include <functional>
#include <vector>

namespace hearth::household {

struct search_options {
  double start = 1;         //!< first rate tried (> 0)
  double target = 0.9;      //!< attainment a rate must reach to pass
  double resolution = 0.1;  //!< relative width of the final bracket
  int max_runs = 8;         //!< trials at most
  double min_rate = 1e-3;   //!< below this, give up: capacity 0
};

struct trial_point {
  double rate = 0;
  double attainment = 0;
};

struct capacity_result {
  double capacity = 0;  //!< where attainment crosses the target (0: the lowest rate fails)
  bool bracketed =
      false;  //!< a failing rate above it was seen (else capacity is a lower bound: the highest rate)
  std::vector<trial_point> trials;  //!< in the order run
};

//! `attainment_at(rate)` runs one trial. A trial's attainment is its own: a noisy, non-monotone
//! point does not stop the search, which trusts the bracket it has.
//! r.capacity and r.bracketed from r.trials, as above.
void estimate_capacity(capacity_result& r, double target);

capacity_result find_capacity(const std::function<double(double rate)>& attainment_at,
                              const search_options& opt);

}  // namespace hearth::household
