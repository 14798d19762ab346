#pragma once
// Deterministic random numbers: xoshiro256** seeded through splitmix64. Integer arithmetic only,
// so a seed gives the same stream on every platform (std:: distributions are
// implementation-defined). Used for sampling, generated text and generated weights.

#include <cstdint>

namespace hearth {

// The generator's steps are always inlined, even at -O0: the sanitizer build compiles the tests
// at -O0 and the model library at -O1, and a test's out-of-line copy of an inline function is
// the one the linker keeps for both, so the generated weights of every test model went through
// it (a tenth of a model test's time under the sanitizers).
#define HEARTH_RNG_INLINE [[gnu::always_inline]] inline

//! One splitmix64 step: advances `state` and returns a well-mixed 64-bit value.
HEARTH_RNG_INLINE uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

class rng {
 public:
  explicit rng(uint64_t seed) {
    for (auto& s : s_) s = splitmix64(seed);
  }

  //! The next 64 random bits.
  HEARTH_RNG_INLINE uint64_t next() {
    const uint64_t out = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return out;
  }

  //! Uniform in [0, 1) with 53 random bits.
  HEARTH_RNG_INLINE double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  //! Uniform in [0, n), n > 0: draws below 2^64 mod n are rejected so no value is favoured.
  uint64_t below(uint64_t n) {
    const uint64_t reject_below = (0 - n) % n;
    uint64_t x = next();
    while (x < reject_below) x = next();
    return x % n;
  }

 private:
  HEARTH_RNG_INLINE static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t s_[4];
};

}  // namespace hearth
