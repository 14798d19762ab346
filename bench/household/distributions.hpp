#pragma once
// What a workload draws from: request lengths (fixed, uniform, lognormal) and arrival processes
// (Poisson, or gamma-distributed gaps with a coefficient of variation: burstiness). Seeded with
// common/rng.hpp's generator, with our own transforms (not std:: distributions, whose output is
// implementation-defined), so a seed gives the same workload on every platform.

#include <cstdint>
#include <vector>

#include "common/rng.hpp"

namespace hearth::household {

enum class length_kind : uint8_t { fixed, uniform, lognormal };

//! A token count. fixed: always `min` (= max). uniform: an integer in [min, max]. lognormal:
//! mean `mean` and coefficient of variation `cv` before clamping to [min, max].
struct length_dist {
  length_kind kind = length_kind::fixed;
  uint32_t min = 1, max = 1;
  double mean = 1, cv = 0;

  uint32_t draw(rng& r) const;
};

enum class arrival_kind : uint8_t { poisson, gamma };

//! Gaps between arrivals: exponential (Poisson, cv 1) or gamma with shape 1/cv^2, mean 1/rate.
//! cv > 1 is burstier than Poisson (clumps and lulls), cv < 1 more regular.
struct arrival_process {
  arrival_kind kind = arrival_kind::poisson;
  double rate = 1;  //!< requests per second (> 0)
  double cv = 1;    //!< gamma only: the gaps' standard deviation / mean (> 0)

  double next_gap(rng& r) const;
};

//! Arrival times in [0, duration_s), from the process's own generator seeded with `seed`.
std::vector<double> arrival_times(const arrival_process& p, double duration_s, uint64_t seed);

double draw_normal(rng& r);               //!< standard normal (Box-Muller)
double draw_gamma(rng& r, double shape);  //!< gamma(shape, scale 1), shape > 0 (Marsaglia-Tsang)

}  // namespace hearth::household
