#pragma once
// Seeds for the randomised tests, replayable. A test takes its seed from test_seed(): the value
// of HEARTH_TEST_SEED when it is set (a replay), else a fresh one from std::random_device, so that
// every run still tries new inputs. Each seed is printed on stdout with the test case's name and
// the way to replay it; ctest --output-on-failure shows that line for a failed test. CAPTURE the
// seed as well where a failure's own report should carry it.
//
//   HEARTH_TEST_SEED=12345 ctest --test-dir build -R "paged attention matches dense attention"
#include <catch2/catch.hpp>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string_view>

namespace hearth::test {

//! A seed as HEARTH_TEST_SEED spells it: decimal digits and nothing else (no sign, space, prefix or
//! suffix), at most 2^64 - 1; nullopt for anything else.
inline std::optional<uint64_t> parse_test_seed(std::string_view text) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [at, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || at != end) return std::nullopt;
  return v;
}

//! The seed for the running test: HEARTH_TEST_SEED's, else a fresh one; printed on stdout. A
//! malformed HEARTH_TEST_SEED fails the test: a replay that quietly drew another seed would pass
//! for having reproduced nothing.
inline uint64_t test_seed() {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  uint64_t seed = 0;
  if (const char* given = std::getenv("HEARTH_TEST_SEED")) {
    const auto parsed = parse_test_seed(given);
    if (!parsed) {
      FAIL("HEARTH_TEST_SEED='" << given << "' is not a seed: write it in decimal digits, below 2^64");
      return 0;  // (not reached: FAIL throws)
    }
    seed = *parsed;
  } else {
    std::random_device device;
    seed = (uint64_t{device()} << 32) | device();
  }
  std::printf("%s: seed %llu (replay: HEARTH_TEST_SEED=%llu)\n", name.c_str(),
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

//! Successive seeds drawn from one test seed (splitmix64), for a test that seeds several things
//! (one sampler per case): replaying the test seed replays every one of them.
class seed_sequence {
 public:
  explicit seed_sequence(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace hearth::test
