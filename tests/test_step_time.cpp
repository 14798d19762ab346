#include <catch2/catch.hpp>

#include <random>

#include "engine/step_time.hpp"

using namespace hearth;

TEST_CASE("the step-time fit recovers a linear cost model and follows a change", "[step_time]") {
  step_time_fit fit(50);
  CHECK(fit.model().base_ms == 0);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint32_t> tokens(1, 512), seqs(1, 64);
  for (int i = 0; i < 300; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    fit.add(t, s, 2.0 + 0.05 * t + 0.1 * s);
  }
  CHECK(fit.model().base_ms == Approx(2.0).epsilon(1e-6));
  CHECK(fit.model().per_token_ms == Approx(0.05).epsilon(1e-6));
  CHECK(fit.model().per_seq_ms == Approx(0.1).epsilon(1e-6));
  CHECK(fit.model().predict_ms(100, 10) == Approx(2.0 + 5.0 + 1.0));
  // The machine slows down: the fit moves within a few memories' worth of steps.
  for (int i = 0; i < 500; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    fit.add(t, s, 4.0 + 0.1 * t + 0.1 * s);
  }
  CHECK(fit.model().per_token_ms == Approx(0.1).epsilon(0.01));
}

TEST_CASE("steps of one shape give a proportional model that predicts them", "[step_time]") {
  step_time_fit fit;
  for (int i = 0; i < 10; ++i) fit.add(64, 64, 30.0);
  const auto& m = fit.model();
  CHECK(m.predict_ms(64, 64) == Approx(30.0).margin(1e-6).epsilon(1e-6));
}
