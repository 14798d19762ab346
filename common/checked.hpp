#pragma once
// Overflow-safe arithmetic for sizes computed from untrusted input (model files, wire frames).

#include <cstdint>
#include <optional>

namespace hearth {

//! a + b, or nullopt when it does not fit in 64 bits.
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

//! a * b, or nullopt when it does not fit in 64 bits.
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

//! x rounded up to a multiple of `align` (> 0), or nullopt on overflow.
inline std::optional<uint64_t> checked_align_up(uint64_t x, uint64_t align) {
  auto r = checked_add(x, align - 1);
  if (!r) return std::nullopt;
  return *r / align * align;
}

}  // namespace hearth
