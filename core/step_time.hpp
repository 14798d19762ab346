#pragma once
// The measured step-time model policies plan with: step ms ≈ base + per_token * tokens +
// per_seq * sequences + per_kpair * attention kpairs, fitted online by least squares over the
// worker's reported compute times, with exponential forgetting so it follows the machine
// (thermal limits, other load). The attention term is what makes a 32-token chunk at position
// 2000 of a document cost twice one at its start on `small`.

#include <array>
#include <cstdint>
#include <optional>

#include "policies/policy.hpp"

namespace hearth {

class step_time_fit {
 public:
  //! `memory`: how many recent steps weigh in, roughly (forgetting factor 1 - 1/memory).
  explicit step_time_fit(double memory = 200) : keep_(1.0 - 1.0 / memory) {}

  void add(uint32_t tokens, uint32_t seqs, double kpairs, double ms);
  //! The current fit, and the root mean square of its recent errors relative to its predictions. Without the
  //! attention term while the steps seen cannot tell it apart from the others; proportional to tokens alone
  //! until they can tell the first three apart; all zero before the first step.
  const step_time_model& model() const { return model_; }

 private:
  static constexpr size_t n_terms = 4;  // 1, tokens, seqs, kpairs
  using coefficients = std::array<double, n_terms>;
  std::optional<coefficients> solve_first(size_t n) const;
  void solve();

  double keep_;
  std::array<double, n_terms * n_terms> xtx_{};  // sum of w * x x^T
  coefficients xty_{};                           // sum of w * x * ms
  step_time_model model_;
  // The error of each prediction before its step joined the fit, from the first fit that tells
  // the terms apart (the proportional stand-in's early errors would inflate it for long).
  bool solved_ = false;
  double error_weight_ = 0, error_sq_ = 0;  // sum of w, sum of w * error^2
};

}  // namespace hearth
