#pragma once
// The backend's matrix products through cuBLASLt: y (m, n) f32 = x (m, k) w (n, k)^T, x and w
// both f32 (true f32, no TF32: the f32 compute type is the precise one) or both bf16 with f32
// accumulation. Row-major y is cuBLAS's column-major y^T = w x^T, so w is operand A, transposed.
// Each (m, n, k, type) is planned once (layouts and the heuristic's algorithm) and reused.

#include <cstdint>
#include <memory>
#include <unordered_map>

#include <cublasLt.h>

#include "common/result.hpp"
#include "kernels/cuda/cuda_memory.hpp"
#include "kernels/cuda/cuda_ops.hpp"

namespace hearth::cuda {

class gemm {
 public:
  //! Opens cuBLASLt, once per process (it is loaded at run time, not linked; no device needed):
  //! errc::unsupported naming the library, or the functions it lacks.
  static status<> open_library();
  //! A handle and workspace for products on stream s.
  static result<std::unique_ptr<gemm>> create(cudaStream_t s);
  ~gemm();
  gemm(const gemm&) = delete;
  gemm& operator=(const gemm&) = delete;

  status<> run(const void* x, const void* w, float* y, uint32_t m, uint32_t n, uint32_t k, act_type t);

 private:
  struct plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
  };
  gemm(cudaStream_t s, cublasLtHandle_t h, device_buffer ws) : s_(s), h_(h), ws_(std::move(ws)) {}
  result<const plan*> plan_for(uint32_t m, uint32_t n, uint32_t k, act_type t);
  static void destroy(plan& p);

  cudaStream_t s_;
  cublasLtHandle_t h_;
  device_buffer ws_;
  std::unordered_map<uint64_t, plan> plans_;
};

}  // namespace hearth::cuda
