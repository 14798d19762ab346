#include "engine/step_time.hpp"

#include <algorithm>
#include <cmath>

namespace hearth {

void step_time_fit::add(uint32_t tokens, uint32_t seqs, double ms) {
  const std::array<double, 3> x = {1.0, static_cast<double>(tokens), static_cast<double>(seqs)};
  for (size_t i = 0; i < 3; ++i) {
    xty_[i] = keep_ * xty_[i] + x[i] * ms;
    for (size_t j = 0; j < 3; ++j) xtx_[i * 3 + j] = keep_ * xtx_[i * 3 + j] + x[i] * x[j];
  }
  solve();
}

// Gaussian elimination with partial pivoting on the 3x3 normal equations. While the system is
// near-singular (every step the same shape so far), the cost is taken as proportional to the
// tokens: a rough model at once beats none.
void step_time_fit::solve() {
  std::array<double, 12> m{};  // rows of [xtx | xty]
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 3; ++j) m[i * 4 + j] = xtx_[i * 3 + j];
    m[i * 4 + 3] = xty_[i];
  }
  const double scale = std::max({m[0], m[5], m[10]});
  for (size_t c = 0; c < 3; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < 3; ++r) {
      if (std::abs(m[r * 4 + c]) > std::abs(m[p * 4 + c])) p = r;
    }
    if (std::abs(m[p * 4 + c]) <= 1e-9 * scale) {
      model_ = {0, xtx_[4] > 0 ? xty_[1] / xtx_[4] : 0, 0};  // sum w t ms / sum w t^2
      return;
    }
    for (size_t k = 0; k < 4; ++k) std::swap(m[c * 4 + k], m[p * 4 + k]);
    for (size_t r = 0; r < 3; ++r) {
      if (r == c) continue;
      const double f = m[r * 4 + c] / m[c * 4 + c];
      for (size_t k = c; k < 4; ++k) m[r * 4 + k] -= f * m[c * 4 + k];
    }
  }
  // Costs cannot be negative: a term the data cannot support counts as zero.
  model_ = {std::max(0.0, m[3] / m[0]), std::max(0.0, m[7] / m[5]), std::max(0.0, m[11] / m[10])};
}

}  // namespace hearth
