#include <catch2/catch.hpp>

#include <random>

#include "core/step_time.hpp"

using namespace hearth;

TEST_CASE("the step-time fit recovers a linear cost model and follows a change", "[step_time]") {
  step_time_fit fit(50);
  CHECK(fit.model().base_ms == 0);
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<uint32_t> tokens(1, 512), seqs(1, 64);
  std::uniform_real_distribution<double> kpairs(0, 400);
  for (int i = 0; i < 300; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    const double k = kpairs(rng);
    fit.add(t, s, k, 2.0 + 0.05 * t + 0.1 * s + 0.3 * k);
  }
  CHECK(fit.model().base_ms == Approx(2.0).epsilon(1e-6));
  CHECK(fit.model().per_token_ms == Approx(0.05).epsilon(1e-6));
  CHECK(fit.model().per_seq_ms == Approx(0.1).epsilon(1e-6));
  CHECK(fit.model().per_kpair_ms == Approx(0.3).epsilon(1e-6));
  CHECK(fit.model().predict_ms(100, 10, 20) == Approx(2.0 + 5.0 + 1.0 + 6.0));
  // The machine slows down: the fit moves within a few memories' worth of steps.
  for (int i = 0; i < 500; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    const double k = kpairs(rng);
    fit.add(t, s, k, 4.0 + 0.1 * t + 0.1 * s + 0.3 * k);
  }
  CHECK(fit.model().per_token_ms == Approx(0.1).epsilon(0.01));
}

TEST_CASE("the fit reports the spread of its recent errors", "[step_time]") {
  step_time_fit exact(50), noisy(50);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint32_t> tokens(1, 512), seqs(1, 64);
  // Noise in proportion to the step, as contention makes it: root mean square 0.1 / sqrt(3).
  std::uniform_real_distribution<double> noise(-0.1, 0.1);
  for (int i = 0; i < 2000; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    exact.add(t, s, 0, 2.0 + 0.05 * t + 0.1 * s);
    noisy.add(t, s, 0, (2.0 + 0.05 * t + 0.1 * s) * (1 + noise(rng)));
  }
  CHECK(exact.model().error_ratio < 1e-9);
  CHECK(noisy.model().error_ratio == Approx(0.0577).epsilon(0.2));
}

TEST_CASE("steps that cannot tell attention apart give the three-term model", "[step_time]") {
  // Every step's attention proportional to its tokens (prefill from position 0 in equal
  // chunks): the attention term cannot be told from the token term, and the rest still fits.
  step_time_fit fit(50);
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<uint32_t> tokens(1, 512), seqs(1, 64);
  for (int i = 0; i < 300; ++i) {
    const uint32_t t = tokens(rng), s = seqs(rng);
    fit.add(t, s, 0.01 * t, 2.0 + 0.05 * t + 0.1 * s);
  }
  CHECK(fit.model().per_kpair_ms == 0);
  CHECK(fit.model().per_token_ms == Approx(0.05).epsilon(1e-6));
  CHECK(fit.model().per_seq_ms == Approx(0.1).epsilon(1e-6));
}

TEST_CASE("steps of one shape give a proportional model that predicts them", "[step_time]") {
  step_time_fit fit;
  for (int i = 0; i < 10; ++i) fit.add(64, 64, 2.08, 30.0);
  const auto& m = fit.model();
  CHECK(m.predict_ms(64, 64) == Approx(30.0).margin(1e-6).epsilon(1e-6));
}
