#pragma once
// Dense layers on oneDNN: y (m, n_out) = x (m, n_in) @ W^T (+ b), W stored (n_out, n_in) as in
// PyTorch / GGUF. Weights are converted once at load to the compute type (f32 or bf16) and
// reordered into the blocked layout oneDNN prefers; primitives are built once per shape and
// batch size and reused. Where oneDNN has no bf16 matmul (AVX2), bf16 weights are kept as bf16
// in our own panel layout and multiplied by our own kernel (kernels/bf16_gemm.hpp) at small m.
// oneDNN stays inside kernels/: this header shows none of it.

#include <cstdint>
#include <memory>
#include <span>

#include "common/result.hpp"
#include "model/tensor_types.hpp"

namespace hearth {

//! What the matrix work computes in. bf16: bf16 x bf16 with f32 accumulation and f32 output.
enum class compute_type { f32, bf16 };
//! "f32" or "bf16".
inline const char* to_string(compute_type ct) { return ct == compute_type::f32 ? "f32" : "bf16"; }

//! One GGUF weight tensor's raw data, (n_out, n_in) in `type`, with an optional bias (n_out,).
struct weight_part {
  tensor_type type;
  std::span<const std::byte> data;
  uint32_t n_out;
  std::span<const float> bias;
};

class linear {
 public:
  //! Stacks the parts' rows into one matrix (sum of n_out, n_in), so Q/K/V or gate/up run as one
  //! matmul. Any tensor_type is accepted: f16/q8_0/q4_0 are dequantized and converted to `ct`.
  //! Parts without a bias get zeros when another part has one.
  static result<linear> create(std::span<const weight_part> parts, uint32_t n_in, compute_type ct);

  //! x (m, n_in) f32 row-major -> y (m, n_out) f32 row-major; m >= 1.
  void forward(const float* x, float* y, uint32_t m) const;

  uint32_t n_in() const;
  uint32_t n_out() const;
  //! Bytes the converted weights occupy (for memory accounting): 2 per weight for bf16, 4 for f32.
  size_t weight_bytes() const;

  linear(linear&&) noexcept;
  linear& operator=(linear&&) noexcept;
  ~linear();

 private:
  struct impl;
  explicit linear(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth
