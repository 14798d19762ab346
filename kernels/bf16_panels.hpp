#pragma once
// What the bf16 kernels (bf16_gemm.cpp, bf16_gemm_w16.cpp) share about the panel layout of
// bf16_matrix; internal to kernels/.

#include <cstdint>

#include "kernels/bf16_gemm.hpp"

namespace hearth::bf16_panels {

inline constexpr uint32_t panel_rows = bf16_matrix::panel_rows;

//! The slot of output row r (of a panel's 16) within each k's 16 weights.
constexpr uint32_t slot_of(uint32_t r) {
  return r < panel_rows / 2 ? 2 * r : 2 * (r - panel_rows / 2) + 1;
}

//! The w16 kernel: y (m, n_out) = xr (m, n_in, already rounded to bf16) @ W^T (+ bias or null).
void gemm_w16(const bf16_matrix& w, const float* xr, float* y, uint32_t m, const float* bias);

}  // namespace hearth::bf16_panels
