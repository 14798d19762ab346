#pragma once
// The measured step-time model policies plan with: step ms ≈ base + per_token * tokens +
// per_seq * sequences, fitted online by least squares over the worker's reported compute times,
// with exponential forgetting so it follows the machine (thermal limits, other load).

#include <array>
#include <cstdint>

#include "policies/policy.hpp"

namespace hearth {

class step_time_fit {
 public:
  //! `memory`: how many recent steps weigh in, roughly (forgetting factor 1 - 1/memory).
  explicit step_time_fit(double memory = 200) : keep_(1.0 - 1.0 / memory) {}

  void add(uint32_t tokens, uint32_t seqs, double ms);
  //! The current fit; proportional to tokens alone until the steps seen vary enough to tell
  //! the three terms apart; all zero before the first step.
  const step_time_model& model() const { return model_; }

 private:
  void solve();

  double keep_;
  std::array<double, 9> xtx_{};  // sum of w * x x^T, x = (1, tokens, seqs)
  std::array<double, 3> xty_{};  // sum of w * x * ms
  step_time_model model_;
};

}  // namespace hearth
