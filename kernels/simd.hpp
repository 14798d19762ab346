#pragma once
// SIMD building blocks of cpu_ops.cpp, attention_tile.hpp and paged_attention.cpp, internal to kernels/.
// Elementwise loops are plain loops the compiler vectorises. Reductions inside other loops (dot products, the
// attention tiles) use GCC/Clang vector extensions instead: there GCC's auto-vectoriser vectorises the outer
// loop and drowns in shuffles (measured 10x slower). No libm calls: exp() is a polynomial, so it vectorises
// too.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

// Hot loops are compiled for baseline x86-64, x86-64-v3 (AVX2 + FMA) and x86-64-v4 (AVX-512); the
// dynamic loader picks the best the CPU has, so one binary runs on any x86-64 machine. Not under
// ThreadSanitizer: the loader runs the (instrumented) resolvers before TSan's runtime starts.
// Clang (14 and later) makes the same clones: its sanitizer build then checks the code that runs.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HEARTH_TSAN 1
#endif
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(HEARTH_NO_SIMD_CLONES) && \
    !defined(__SANITIZE_THREAD__) && !defined(HEARTH_TSAN)
#define HEARTH_SIMD_CLONES __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define HEARTH_SIMD_CLONES
#endif
// Helpers must be inlined into the clones: a call would run the baseline (SSE2) code.
#define HEARTH_SIMD_INLINE [[gnu::always_inline]] inline

namespace hearth::simd {

//! 8 floats: one AVX2 register, two SSE ones. Wider generic vectors are worse, not better: GCC
//! spills them through the stack on targets narrower than the vector.
inline constexpr uint32_t lanes = 8;
using vec = float __attribute__((vector_size(lanes * sizeof(float))));
using ivec = int32_t __attribute__((vector_size(lanes * sizeof(int32_t))));

HEARTH_SIMD_INLINE vec load(const float* p) {
  vec v;
  std::memcpy(&v, p, sizeof v);  // unaligned
  return v;
}

HEARTH_SIMD_INLINE void store(float* p, vec v) {
  std::memcpy(p, &v, sizeof v);
}

//! x in every lane: one broadcast. (`vec{} + x` adds 0.0 first; `vec{x, x, ...}` inserts lane by
//! lane.)
HEARTH_SIMD_INLINE vec splat(float x) {
  const vec v{x};
  return __builtin_shufflevector(v, v, 0, 0, 0, 0, 0, 0, 0, 0);
}

//! Lane by lane, the larger of a and b.
HEARTH_SIMD_INLINE vec max(vec a, vec b) {
  return a > b ? a : b;
}

//! The sum of v's lanes, as a tree.
HEARTH_SIMD_INLINE float hsum(vec v) {
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
  return v[0];
}

//! The lane sums of 8 vectors as one vector: out[i] = hsum(v[i]). A tree of pairwise sums
//! (14 shuffles, 7 adds) in place of 8 separate reductions.
HEARTH_SIMD_INLINE vec hsum8(const vec (&v)[8]) {
  vec t[4], u[2];
  for (int i = 0; i < 4; ++i)  // lanes (v0+v1 pairs | v0' pairs ...) within each 128-bit half
    t[i] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 2, 8, 10, 4, 6, 12, 14) +
           __builtin_shufflevector(v[2 * i], v[2 * i + 1], 1, 3, 9, 11, 5, 7, 13, 15);
  for (int i = 0; i < 2; ++i)
    u[i] = __builtin_shufflevector(t[2 * i], t[2 * i + 1], 0, 2, 8, 10, 4, 6, 12, 14) +
           __builtin_shufflevector(t[2 * i], t[2 * i + 1], 1, 3, 9, 11, 5, 7, 13, 15);
  // u0 = (v0 v1 v2 v3 | v0 v1 v2 v3) partial sums of the low | high halves, u1 likewise for v4-v7
  return __builtin_shufflevector(u[0], u[1], 0, 1, 2, 3, 8, 9, 10, 11) +
         __builtin_shufflevector(u[0], u[1], 4, 5, 6, 7, 12, 13, 14, 15);
}

//! The largest of init and x[0, n), a vector at a time (std::max_element is a scalar loop).
//! Exact, so any order gives the same value.
HEARTH_SIMD_INLINE float max(const float* x, size_t n, float init) {
  size_t i = 0;
  if (n >= lanes) {
    vec m = load(x);
    for (i = lanes; i + lanes <= n; i += lanes) m = max(m, load(x + i));
    m = max(m, load(x + n - lanes));  // the tail, overlapping: max does not mind a repeat
    m = max(m, __builtin_shufflevector(m, m, 4, 5, 6, 7, 0, 1, 2, 3));
    m = max(m, __builtin_shufflevector(m, m, 2, 3, 0, 1, 6, 7, 4, 5));
    m = max(m, __builtin_shufflevector(m, m, 1, 0, 3, 2, 5, 4, 7, 6));
    return std::max(init, m[0]);
  }
  for (; i < n; ++i) init = std::max(init, x[i]);
  return init;
}

//! a (n,) . b (n,) in f32, in 2 x `lanes` independent partial sums.
HEARTH_SIMD_INLINE float dot(const float* a, const float* b, uint32_t n) {
  vec acc0{}, acc1{};
  uint32_t i = 0;
  for (; i + 2 * lanes <= n; i += 2 * lanes) {
    acc0 += load(a + i) * load(b + i);
    acc1 += load(a + i + lanes) * load(b + i + lanes);
  }
  float sum = hsum(acc0 + acc1);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

//! e^x in f32 within 2 ulp (Cephes expf), for a float or a vec. x is clamped to [-87, 88], so
//! the result is a normal float: e^-87 stands for 0 wherever it multiplies something finite.
template <class T>
HEARTH_SIMD_INLINE T exp(T x) {
  x = x < -87.0f ? T{} - 87.0f : x;
  x = x > 88.0f ? T{} + 88.0f : x;
  // n = round(x / ln 2) by the 1.5 * 2^23 trick (SSE2 has no round instruction).
  const float shifter = 12582912.0f;
  const T n = (x * 1.44269504088896341f + shifter) - shifter;
  // r = x - n ln 2 in two steps so that r keeps full precision.
  const T r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  T p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const T y = p * r * r + r + 1.0f;
  if constexpr (std::is_same_v<T, float>) {
    const uint32_t two_n = static_cast<uint32_t>(static_cast<int32_t>(n) + 127)
                           << 23;  // 2^n, n in [-126, 127]
    return y * std::bit_cast<float>(two_n);
  } else {
    const ivec two_n_bits = (__builtin_convertvector(n, ivec) + 127) << 23;
    vec two_n;  // memcpy, not bit_cast: UBSan (GCC 12) reports a null load in bit_cast of vectors
    std::memcpy(&two_n, &two_n_bits, sizeof two_n);
    return y * two_n;
  }
}

//! tanh(x) = 1 - 2 / (e^2x + 1), for a float or a vec: within ~1e-7 absolute (exp's clamp gives
//! exactly +-1 far out). Soft-capping's c tanh(x / c) needs no more than that.
template <class T>
HEARTH_SIMD_INLINE T tanh(T x) {
  return 1.0f - 2.0f / (exp(x + x) + 1.0f);
}

//! x (n,) = cap * tanh(x / cap) in place: soft-capping of attention scores and logits.
HEARTH_SIMD_INLINE void softcap(float* x, size_t n, float cap) {
  const float inv = 1.0f / cap;
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) store(x + i, cap * tanh(load(x + i) * inv));
  for (; i < n; ++i) x[i] = cap * tanh(x[i] * inv);
}

//! 16 bf16 values read as 8 32-bit pairs and widened without shuffles: `lo` = the low halves
//! (elements 0, 2, ..., 14), `hi` = the high halves (1, 3, ..., 15). Two integer ops; callers
//! store their data, or permute the other operand, to match this order.
HEARTH_SIMD_INLINE void widen_bf16_pairs(const uint16_t* p, vec& lo, vec& hi) {
  using pairs = uint32_t __attribute__((vector_size(lanes * sizeof(uint32_t))));
  pairs v;
  std::memcpy(&v, p, sizeof v);
  const pairs l = v << 16, h = v & 0xffff0000u;
  std::memcpy(&lo, &l, sizeof lo);  // not bit_cast: see exp()
  std::memcpy(&hi, &h, sizeof hi);
}

HEARTH_SIMD_INLINE float bf16_to_f32(uint16_t b) {
  return std::bit_cast<float>(uint32_t{b} << 16);
}

//! Round to nearest even; NaN stays a (quiet) NaN, as hearth::fp32_to_bf16.
HEARTH_SIMD_INLINE uint16_t f32_to_bf16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

}  // namespace hearth::simd
