#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "kernels/sampler.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

sampler make(const sampling_params& p) {
  auto s = sampler::create(p);
  REQUIRE(s);
  return std::move(s).value();
}

// p with the next seed of the test's sequence: replaying the test seed gives each sampler of the
// test its seed again.
sampling_params with_seed(sampling_params p, test::seed_sequence& seeds) {
  p.seed = seeds.next();
  return p;
}

// How often each of logits.size() tokens comes out of n draws.
std::vector<double> frequencies(sampler& s, std::span<const float> logits, int n) {
  std::vector<double> f(logits.size());
  for (int i = 0; i < n; ++i) f[static_cast<size_t>(s.sample(logits, {}))] += 1.0 / n;
  return f;
}

std::vector<token_id> sequence(sampler& s, std::span<const float> logits, int n) {
  std::vector<token_id> out;
  for (int i = 0; i < n; ++i) out.push_back(s.sample(logits, {}));
  return out;
}

// Logits whose softmax is exactly these probabilities (up to rounding).
std::vector<float> logits_of(std::initializer_list<double> probs) {
  std::vector<float> l;
  for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
  return l;
}

}  // namespace

TEST_CASE("greedy takes the argmax, the lowest id on ties", "[sampler]") {
  sampling_params p;
  p.temperature = 0.0f;
  sampler s = make(p);
  CHECK(s.sample(std::vector<float>{0.5f, 2.0f, -1.0f}, {}) == 1);
  CHECK(s.sample(std::vector<float>{1, 3, 3, 2}, {}) == 1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(s.sample(std::vector<float>{nan, -5.0f, nan}, {}) == 1);  // NaN never wins
  CHECK(s.sample(std::vector<float>{}, {}) == no_token);
}

TEST_CASE("non-finite logits neither win nor break the draw", "[sampler]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  test::seed_sequence seeds(test::test_seed());
  sampling_params p = with_seed({}, seeds);
  p.top_p = 0.9f;
  p.min_p = 0.1f;
  CAPTURE(p.seed);
  sampler s = make(p);
  for (int i = 0; i < 100; ++i) {
    CHECK(s.sample(std::vector<float>{nan, -5.0f, nan}, {}) == 1);
    CHECK(s.sample(std::vector<float>{0.0f, inf, 3.0f}, {}) == 1);
    CHECK(s.sample(std::vector<float>{nan, nan}, {}) == 0);
    CHECK(s.sample(std::vector<float>{-inf, -inf, -inf}, {}) == 0);
  }
}

TEST_CASE("top_k = 1 and a vanishing temperature both give the argmax", "[sampler]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  test::seed_sequence seeds(seed);
  sampling_params top1 = with_seed({}, seeds);
  top1.top_k = 1;
  sampling_params cold = with_seed({}, seeds);
  cold.temperature = 1e-4f;
  sampler a = make(top1), b = make(cold);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> logits(20);
    for (auto& l : logits) l = normal(rng);
    const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
    CHECK(a.sample(logits, {}) == argmax);
    // Random logits are at least ~1e-3 apart almost always; 1e-4 makes that a factor e^-10.
    std::vector<float> sorted = logits;
    std::sort(sorted.rbegin(), sorted.rend());
    if (sorted[0] - sorted[1] > 2e-3f) CHECK(b.sample(logits, {}) == argmax);
  }
}

TEST_CASE("at temperature T the draws follow softmax(logits / T)", "[sampler]") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f};
  test::seed_sequence seeds(test::test_seed());
  for (float temp : {1.0f, 0.5f}) {
    sampling_params p = with_seed({}, seeds);
    p.temperature = temp;
    CAPTURE(temp, p.seed);
    sampler s = make(p);
    const int n = 20000;
    const auto f = frequencies(s, logits, n);
    double z = 0.0;
    for (float l : logits) z += std::exp(l / temp);
    for (size_t i = 0; i < logits.size(); ++i) {
      const double want = std::exp(logits[i] / temp) / z;
      CAPTURE(i, want, f[i]);
      CHECK(std::abs(f[i] - want) < 5 * std::sqrt(want * (1 - want) / n) + 1e-3);  // 5 sigma
    }
  }
}

namespace {

// Draws 2000 tokens from four candidates with each setting of one filter and checks which survive.
void check_kept(const std::vector<std::pair<float, std::set<token_id>>>& cases,
                float sampling_params::*field) {
  const auto logits = logits_of({0.5, 0.3, 0.15, 0.05});
  test::seed_sequence seeds(test::test_seed());
  for (const auto& [value, kept] : cases) {
    sampling_params p = with_seed({}, seeds);
    p.*field = value;
    CAPTURE(value, p.seed);
    sampler s = make(p);
    const auto drawn = sequence(s, logits, 2000);
    CHECK(std::set<token_id>(drawn.begin(), drawn.end()) == kept);
  }
}

}  // namespace

TEST_CASE("top_p keeps the smallest set that reaches p", "[sampler]") {
  check_kept({{0.45f, {0}}, {0.75f, {0, 1}}, {0.85f, {0, 1, 2}}, {1.0f, {0, 1, 2, 3}}},
             &sampling_params::top_p);
}

TEST_CASE("min_p drops tokens below min_p times the top probability", "[sampler]") {
  check_kept({{0.2f, {0, 1, 2}}, {0.5f, {0, 1}}, {0.9f, {0}}, {0.05f, {0, 1, 2, 3}}},
             &sampling_params::min_p);
}

TEST_CASE("top_k keeps the k most likely tokens, ties to the lower id", "[sampler]") {
  test::seed_sequence seeds(test::test_seed());
  sampling_params p = with_seed({}, seeds);
  p.top_k = 2;
  CAPTURE(p.seed);
  sampler s = make(p);
  const auto drawn = sequence(s, std::vector<float>{0.0f, 1.0f, 0.0f, 1.0f, 0.9f}, 2000);
  CHECK(std::set<token_id>(drawn.begin(), drawn.end()) == std::set<token_id>{1, 3});
  const auto tied = sequence(s, std::vector<float>{1.0f, 0.0f, 1.0f, 1.0f}, 2000);
  CHECK(std::set<token_id>(tied.begin(), tied.end()) == std::set<token_id>{0, 2});
}

TEST_CASE("the repetition penalty moves the argmax off recent tokens", "[sampler]") {
  sampling_params p;
  p.temperature = 0.0f;
  p.repetition_penalty = 1.5f;
  p.repeat_last_n = 3;
  sampler s = make(p);
  const std::vector<float> positive = {2.0f, 1.9f, 0.5f};  // 2.0 / 1.5 = 1.33 < 1.9
  CHECK(s.sample(positive, std::vector<token_id>{}) == 0);
  CHECK(s.sample(positive, std::vector<token_id>{0}) == 1);
  CHECK(s.sample(positive, std::vector<token_id>{0, 2, 2, 2}) == 0);   // 0 is outside the window
  CHECK(s.sample(positive, std::vector<token_id>{-3, 7, 1000}) == 0);  // unknown ids ignored
  const std::vector<float> negative = {-1.0f, -1.2f};                  // -1.0 * 1.5 = -1.5 < -1.2
  CHECK(s.sample(negative, std::vector<token_id>{0}) == 1);
  // Once per distinct token: 4.0 / 1.5 = 2.67 > 1.5 (thrice would be 1.19).
  CHECK(s.sample(std::vector<float>{4.0f, 1.5f}, std::vector<token_id>{0, 0, 0}) == 0);
}

TEST_CASE("a seed replays its sequence and different seeds differ", "[sampler]") {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.0f, -0.1f};
  test::seed_sequence seeds(test::test_seed());
  sampling_params p = with_seed({}, seeds);
  CAPTURE(p.seed);
  sampler a = make(p), b = make(p);
  const auto seq_a = sequence(a, logits, 200);
  CHECK(sequence(b, logits, 200) == seq_a);
  p.seed += 1;
  sampler c = make(p);
  CHECK(sequence(c, logits, 200) != seq_a);
}

TEST_CASE("a sampler made at draw k continues the stream where another left it", "[sampler]") {
  const std::vector<float> logits = {0.1f, 0.2f, 0.3f, 0.0f, -0.1f};
  test::seed_sequence seeds(test::test_seed());
  const sampling_params p = with_seed({}, seeds);
  CAPTURE(p.seed);
  sampler whole = make(p);
  const auto all = sequence(whole, logits, 100);
  CHECK(whole.next_draw() == 100);
  for (uint64_t k : {1u, 37u, 99u}) {
    auto resumed = sampler::create(p, k);
    REQUIRE(resumed);
    const auto rest = sequence(*resumed, logits, static_cast<int>(100 - k));
    CHECK(std::equal(rest.begin(), rest.end(), all.begin() + static_cast<ptrdiff_t>(k)));
  }
}

TEST_CASE("invalid parameters are rejected, naming the field", "[sampler]") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  auto rejects = [](sampling_params p, const std::string& field) {
    auto s = sampler::create(p);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == errc::invalid_argument);
    CHECK_THAT(s.error().message, Catch::Contains(field));
  };
  for (float t : {nan, -0.5f, inf}) {
    sampling_params p;
    p.temperature = t;
    rejects(p, "temperature");
  }
  for (float top_p : {nan, 0.0f, -0.1f, 1.01f}) {
    sampling_params p;
    p.top_p = top_p;
    rejects(p, "top_p");
  }
  for (float min_p : {nan, -0.1f, 1.0f}) {
    sampling_params p;
    p.min_p = min_p;
    rejects(p, "min_p");
  }
  for (float penalty : {nan, 0.0f, -1.0f, inf}) {
    sampling_params p;
    p.repetition_penalty = penalty;
    rejects(p, "repetition_penalty");
  }
  sampling_params edge;
  edge.temperature = 0.0f;
  edge.top_p = 1.0f;
  edge.min_p = 0.0f;
  CHECK(sampler::create(edge));
}

TEST_CASE("banned tokens are never drawn, and the others keep their odds", "[sampler]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  test::seed_sequence seeds(seed);
  const auto logits = logits_of({0.7, 0.1, 0.1, 0.1});
  sampling_params greedy;
  greedy.temperature = 0.0f;
  greedy.banned = {0, 7, -1};  // ids outside the vocabulary are ignored
  sampler g = make(greedy);
  CHECK(g.sample(logits, {}) == 1);  // the argmax banned: the next best, lowest id on ties
  sampling_params p;
  p.banned = {0};
  sampler s = make(with_seed(p, seeds));
  const auto f = frequencies(s, logits, 6000);
  CHECK(f[0] == 0);
  for (size_t i = 1; i < 4; ++i) CHECK(f[i] == Approx(1.0 / 3).margin(0.04));
}
