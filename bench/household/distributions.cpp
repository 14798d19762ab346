#include "bench/household/distributions.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace hearth::household {

double draw_normal(rng& r) {
  const double u = 1.0 - r.unit();  // (0, 1]: log stays finite
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * std::numbers::pi * r.unit());
}

double draw_gamma(rng& r, double shape) {
  // Shape below 1 (bursty gaps): gamma(shape + 1) * U^(1/shape).
  if (shape < 1) return draw_gamma(r, shape + 1) * std::pow(1.0 - r.unit(), 1.0 / shape);
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = draw_normal(r);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const double u = 1.0 - r.unit();
    if (std::log(u) < 0.5 * x * x + d - d * v + d * std::log(v)) return d * v;
  }
}

uint32_t length_dist::draw(rng& r) const {
  switch (kind) {
    case length_kind::fixed:
      return min;
    case length_kind::uniform:
      return min + static_cast<uint32_t>(r.below(uint64_t{max} - min + 1));
    case length_kind::lognormal: {
      const double s2 = std::log1p(cv * cv);
      const double x = std::exp(std::log(mean) - s2 / 2 + std::sqrt(s2) * draw_normal(r));
      return static_cast<uint32_t>(std::clamp(std::round(x), double(min), double(max)));
    }
  }
  return min;
}

double arrival_process::next_gap(rng& r) const {
  if (kind == arrival_kind::poisson) return -std::log(1.0 - r.unit()) / rate;
  const double shape = 1.0 / (cv * cv);
  return draw_gamma(r, shape) / (shape * rate);
}

std::vector<double> arrival_times(const arrival_process& p, double duration_s, uint64_t seed) {
  rng r(seed);
  std::vector<double> t;
  for (double now = p.next_gap(r); now < duration_s; now += p.next_gap(r)) t.push_back(now);
  return t;
}

}  // namespace hearth::household
