#pragma once
// Dense layers: y (m, n_out) = x (m, n_in) @ W^T (+ b), W stored (n_out, n_in) as in PyTorch /
// GGUF. Weights are converted once at load to what the layer's plan (kernels/matmul_plan.hpp)
// computes with: f32 or bf16 reordered into the blocked layout oneDNN prefers, or bf16 in our own
// panel layout (kernels/bf16_gemm.hpp); each call runs the plan's path for its m. oneDNN stays
// inside kernels/: this header shows none of it.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/result.hpp"
#include "kernels/matmul_plan.hpp"
#include "model/tensor_types.hpp"

namespace hearth {

//! Whether this CPU runs the path: oneDNN bf16 needs a oneDNN bf16 matmul (AVX-512), hearth-w16
//! AVX-512 (elsewhere it would run, slowly: tests call it anyway); the rest run anywhere.
bool path_available(matmul_path p);
//! Every path that computes in ct and this CPU runs.
std::vector<matmul_path> paths_for(compute_type ct);
//! Whether oneDNN multiplies bf16 in bf16 hardware (avx512_bf16; without it, it takes bf16 matmuls
//! all the same, at a fraction of the speed).
bool native_bf16();
//! The plan for ct without measuring (and the tuner's incumbent): oneDNN in f32; in bf16 where bf16
//! is native, our hearth-dpbf16 at decode sizes (m < 32) and oneDNN's for prefill chunks, else our
//! 8-lane kernel.
matmul_plan default_plan(compute_type ct);

//! One GGUF weight tensor's raw data, (n_out, n_in) in `type`, with an optional bias (n_out,).
//! `owner` keeps `data` alive (the file's mapping): a linear that keeps the weights as stored
//! holds it, or copies the bytes when there is none.
struct weight_part {
  tensor_type type;
  std::span<const std::byte> data;
  uint32_t n_out;
  std::span<const float> bias;
  std::shared_ptr<const void> owner = {};
};

class linear {
 public:
  //! Stacks the parts' rows into one matrix (sum of n_out, n_in), so Q/K/V or gate/up run as one
  //! matmul. Any tensor_type is accepted: f16/q8_0/q4_0 are dequantized and converted to what the
  //! plan computes with, unless the plan keeps them quantized (quant::has_dot types only).
  //! Parts without a bias get zeros when another part has one. errc::unsupported for a plan whose
  //! paths do not share a storage, or that keeps a type quantized that has no dot kernels.
  static result<linear> create(std::span<const weight_part> parts, uint32_t n_in, const matmul_plan& plan);
  //! With default_plan(ct).
  static result<linear> create(std::span<const weight_part> parts, uint32_t n_in, compute_type ct);

  //! x (m, n_in) f32 row-major -> y (m, n_out) f32 row-major; m >= 1.
  void forward(const float* x, float* y, uint32_t m) const;

  uint32_t n_in() const;
  uint32_t n_out() const;
  const matmul_plan& plan() const;
  //! Evicts the weights from every cache level (clflush): the tuner times m = 1 as decode meets
  //! them, in memory.
  void flush_weights() const;
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
