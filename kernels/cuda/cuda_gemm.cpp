#include "kernels/cuda/cuda_gemm.hpp"

#include <string>

namespace hearth::cuda {
namespace {

// cuBLASLt's recommendation for Hopper: 32 MiB lets it pick its split-K and stream-K kernels.
constexpr size_t workspace_bytes = size_t{32} << 20;

status<> check_lt(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return {};
  std::string m = "cublasLt: ";
  m += what;
  m += ": ";
  m += cublasLtGetStatusString(e);
  return error{e == CUBLAS_STATUS_ALLOC_FAILED ? errc::limit_exceeded : errc::io, std::move(m)};
}

}  // namespace

result<std::unique_ptr<gemm>> gemm::create(cudaStream_t s) {
  auto ws = device_buffer::create(workspace_bytes, "the cuBLASLt workspace");
  if (!ws) return ws.error();
  cublasLtHandle_t h = nullptr;
  if (auto st = check_lt(cublasLtCreate(&h), "creating a handle"); !st) return st.error();
  return std::unique_ptr<gemm>(new gemm(s, h, std::move(*ws)));
}

gemm::~gemm() {
  for (auto& [key, p] : plans_) destroy(p);
  cublasLtDestroy(h_);
}

void gemm::destroy(plan& p) {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.op) cublasLtMatmulDescDestroy(p.op);
}

result<const gemm::plan*> gemm::plan_for(uint32_t m, uint32_t n, uint32_t k, act_type t) {
  // m, n and k are below 2^21 (checked by the caller's shapes): one key.
  const uint64_t key = (uint64_t{m} << 43) | (uint64_t{n} << 22) | (uint64_t{k} << 1) | (t == act_type::bf16);
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  plan p;
  const cudaDataType_t in = t == act_type::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  status<> st =
      check_lt(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "a matmul descriptor");
  if (st)
    st = check_lt(
        cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed, sizeof transposed),
        "transa");
  if (st)
    st = check_lt(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain),
                  "transb");
  // Column-major: w is (k, n) with leading dimension k, x (k, m), y (n, m).
  if (st) st = check_lt(cublasLtMatrixLayoutCreate(&p.a, in, k, n, k), "the weights' layout");
  if (st) st = check_lt(cublasLtMatrixLayoutCreate(&p.b, in, k, m, k), "the input's layout");
  if (st) st = check_lt(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, m, n), "the output's layout");
  cublasLtMatmulPreference_t pref = nullptr;
  if (st) st = check_lt(cublasLtMatmulPreferenceCreate(&pref), "a preference");
  const size_t ws = ws_.size();
  if (st)
    st = check_lt(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
        "the workspace");
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  if (st)
    st = check_lt(cublasLtMatmulAlgoGetHeuristic(h_, p.op, p.a, p.b, p.c, p.c, pref, 1, &best, &found),
                  "the heuristic");
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (st && found == 0) {
    st = error{errc::unsupported, "cublasLt: no algorithm for " + std::to_string(m) + " x " +
                                      std::to_string(n) + " x " + std::to_string(k)};
  }
  if (!st) {
    destroy(p);
    return st.error();
  }
  p.algo = best.algo;
  return &plans_.emplace(key, p).first->second;
}

status<> gemm::run(const void* x, const void* w, float* y, uint32_t m, uint32_t n, uint32_t k, act_type t) {
  if (m == 0) return {};
  auto p = plan_for(m, n, k, t);
  if (!p) return p.error();
  const float alpha = 1.0f, beta = 0.0f;
  return check_lt(cublasLtMatmul(h_, (*p)->op, &alpha, w, (*p)->a, x, (*p)->b, &beta, y, (*p)->c, y, (*p)->c,
                                 &(*p)->algo, ws_.get(), ws_.size(), s_),
                  "a matmul");
}

}  // namespace hearth::cuda
