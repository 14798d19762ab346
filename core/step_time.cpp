#include "core/step_time.hpp"

#include <algorithm>
#include <cmath>

namespace hearth {

void step_time_fit::add(uint32_t tokens, uint32_t seqs, double kpairs, double ms) {
  if (solved_) {
    const double predicted = model_.predict_ms(tokens, seqs, kpairs);
    const double error = predicted > 0 ? ms / predicted - 1 : 0;
    error_weight_ = keep_ * error_weight_ + 1;
    error_sq_ = keep_ * error_sq_ + error * error;
  }
  const coefficients x = {1.0, static_cast<double>(tokens), static_cast<double>(seqs), kpairs};
  for (size_t i = 0; i < n_terms; ++i) {
    xty_[i] = keep_ * xty_[i] + x[i] * ms;
    for (size_t j = 0; j < n_terms; ++j) xtx_[i * n_terms + j] = keep_ * xtx_[i * n_terms + j] + x[i] * x[j];
  }
  solve();
  model_.error_ratio = error_weight_ > 0 ? std::sqrt(error_sq_ / error_weight_) : 0;
}

// The normal equations of the first n terms, by Gaussian elimination with partial pivoting;
// nothing while they are near-singular (every step the same shape in those terms so far).
std::optional<step_time_fit::coefficients> step_time_fit::solve_first(size_t n) const {
  std::array<double, n_terms*(n_terms + 1)> m{};  // rows of [xtx | xty]
  const size_t w = n + 1;
  double scale = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) m[i * w + j] = xtx_[i * n_terms + j];
    m[i * w + n] = xty_[i];
    scale = std::max(scale, m[i * w + i]);
  }
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r * w + c]) > std::abs(m[p * w + c])) p = r;
    if (std::abs(m[p * w + c]) <= 1e-9 * scale) return std::nullopt;
    for (size_t k = 0; k < w; ++k) std::swap(m[c * w + k], m[p * w + k]);
    for (size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r * w + c] / m[c * w + c];
      for (size_t k = c; k < w; ++k) m[r * w + k] -= f * m[c * w + k];
    }
  }
  coefficients b{};
  // Costs cannot be negative: a term the data cannot support counts as zero.
  for (size_t i = 0; i < n; ++i) b[i] = std::max(0.0, m[i * w + n] / m[i * w + i]);
  return b;
}

// All four terms when the steps tell them apart; else the first three; else a cost proportional
// to the tokens: a rough model at once beats none.
void step_time_fit::solve() {
  auto b = solve_first(n_terms);
  if (!b) b = solve_first(n_terms - 1);
  solved_ = b.has_value();
  if (b) {
    model_ = {(*b)[0], (*b)[1], (*b)[2], (*b)[3]};
  } else {
    model_ = {0, xtx_[n_terms + 1] > 0 ? xty_[1] / xtx_[n_terms + 1] : 0, 0, 0};  // sum w t ms / sum w t^2
  }
}

}  // namespace hearth
