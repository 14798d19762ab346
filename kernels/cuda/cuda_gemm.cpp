#include "kernels/cuda/cuda_gemm.hpp"

#include <string>

#include <dlfcn.h>

namespace hearth::cuda {
namespace {

// cuBLASLt's recommendation for Hopper: 32 MiB lets it pick its split-K and stream-K kernels.
constexpr size_t workspace_bytes = size_t{32} << 20;

// cuBLASLt is opened when the first product is planned, not linked: loading it costs a process
// ~210 MiB of resident memory and 0.14 s at start (its relocations and static initialisers), and
// every `hearth` process, most of which never touch a GPU, would pay that. Here, every function
// the products call, looked up by name as the library is opened (members are initialised in
// order: lib and missing first).
struct lt_api {
  void* lib;
  std::string missing;  // the functions lib lacks, comma-separated

  template <class F>
  F find(const char* name) {
    auto* f = reinterpret_cast<F>(::dlsym(lib, name));
    if (!f) missing += std::string(missing.empty() ? "" : ", ") + name;
    return f;
  }

// Each function named once: its member, of its own type, found by its name.
#define HEARTH_LT_FUNCTION(f) decltype(&::f) f = find<decltype(&::f)>(#f);
  HEARTH_LT_FUNCTION(cublasLtGetStatusString)
  HEARTH_LT_FUNCTION(cublasLtCreate)
  HEARTH_LT_FUNCTION(cublasLtDestroy)
  HEARTH_LT_FUNCTION(cublasLtMatmulDescCreate)
  HEARTH_LT_FUNCTION(cublasLtMatmulDescDestroy)
  HEARTH_LT_FUNCTION(cublasLtMatmulDescSetAttribute)
  HEARTH_LT_FUNCTION(cublasLtMatrixLayoutCreate)
  HEARTH_LT_FUNCTION(cublasLtMatrixLayoutDestroy)
  HEARTH_LT_FUNCTION(cublasLtMatmulPreferenceCreate)
  HEARTH_LT_FUNCTION(cublasLtMatmulPreferenceDestroy)
  HEARTH_LT_FUNCTION(cublasLtMatmulPreferenceSetAttribute)
  HEARTH_LT_FUNCTION(cublasLtMatmulAlgoGetHeuristic)
  HEARTH_LT_FUNCTION(cublasLtMatmul)
#undef HEARTH_LT_FUNCTION
};

// The soname of the cuBLAS these headers declare, looked up by name (LD_LIBRARY_PATH,
// ld.so.cache), then in the toolkit that built us.
const std::string lt_soname = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

result<lt_api> open_lt() {
  void* h = ::dlopen(lt_soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) h = ::dlopen((HEARTH_CUDA_LIBRARY_DIR "/" + lt_soname).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return error{errc::unsupported, "cublasLt: cannot open " + lt_soname + ": " + ::dlerror()};
  lt_api api{h, {}};
  if (!api.missing.empty())
    return error{errc::unsupported, "cublasLt: " + lt_soname + " lacks " + api.missing};
  return api;  // the library stays open for the process
}

//! The process's cuBLASLt, opened once.
const result<lt_api>& lt() {
  static const result<lt_api> api = open_lt();
  return api;
}

status<> check_lt(cublasStatus_t e, const char* what) {
  if (e == CUBLAS_STATUS_SUCCESS) return {};
  std::string m = "cublasLt: ";
  m += what;
  m += ": ";
  m += lt()->cublasLtGetStatusString(e);
  return error{e == CUBLAS_STATUS_ALLOC_FAILED ? errc::limit_exceeded : errc::io, std::move(m)};
}

}  // namespace

status<> gemm::open_library() {
  if (!lt()) return lt().error();
  return {};
}

result<std::unique_ptr<gemm>> gemm::create(cudaStream_t s) {
  if (auto st = open_library(); !st) return st.error();
  auto ws = device_buffer::create(workspace_bytes, "the cuBLASLt workspace");
  if (!ws) return ws.error();
  cublasLtHandle_t h = nullptr;
  if (auto st = check_lt(lt()->cublasLtCreate(&h), "creating a handle"); !st) return st.error();
  return std::unique_ptr<gemm>(new gemm(s, h, std::move(*ws)));
}

gemm::~gemm() {
  for (auto& [key, p] : plans_) destroy(p);
  lt()->cublasLtDestroy(h_);
}

void gemm::destroy(plan& p) {
  if (p.a) lt()->cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) lt()->cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) lt()->cublasLtMatrixLayoutDestroy(p.c);
  if (p.op) lt()->cublasLtMatmulDescDestroy(p.op);
}

result<const gemm::plan*> gemm::plan_for(uint32_t m, uint32_t n, uint32_t k, act_type t) {
  // m, n and k are below 2^21 (checked by the caller's shapes): one key.
  const uint64_t key = (uint64_t{m} << 43) | (uint64_t{n} << 22) | (uint64_t{k} << 1) | (t == act_type::bf16);
  if (auto it = plans_.find(key); it != plans_.end()) return &it->second;
  plan p;
  const cudaDataType_t in = t == act_type::bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasOperation_t transposed = CUBLAS_OP_T, plain = CUBLAS_OP_N;
  status<> st =
      check_lt(lt()->cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "a matmul descriptor");
  if (st)
    st = check_lt(lt()->cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &transposed,
                                                       sizeof transposed),
                  "transa");
  if (st)
    st = check_lt(
        lt()->cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &plain, sizeof plain),
        "transb");
  // Column-major: w is (k, n) with leading dimension k, x (k, m), y (n, m).
  if (st) st = check_lt(lt()->cublasLtMatrixLayoutCreate(&p.a, in, k, n, k), "the weights' layout");
  if (st) st = check_lt(lt()->cublasLtMatrixLayoutCreate(&p.b, in, k, m, k), "the input's layout");
  if (st) st = check_lt(lt()->cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, n, m, n), "the output's layout");
  cublasLtMatmulPreference_t pref = nullptr;
  if (st) st = check_lt(lt()->cublasLtMatmulPreferenceCreate(&pref), "a preference");
  const size_t ws = ws_.size();
  if (st)
    st = check_lt(lt()->cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &ws, sizeof ws),
                  "the workspace");
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  if (st)
    st = check_lt(lt()->cublasLtMatmulAlgoGetHeuristic(h_, p.op, p.a, p.b, p.c, p.c, pref, 1, &best, &found),
                  "the heuristic");
  if (pref) lt()->cublasLtMatmulPreferenceDestroy(pref);
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
  return check_lt(lt()->cublasLtMatmul(h_, (*p)->op, &alpha, w, (*p)->a, x, (*p)->b, &beta, y, (*p)->c, y,
                                       (*p)->c, &(*p)->algo, ws_.get(), ws_.size(), s_),
                  "a matmul");
}

}  // namespace hearth::cuda
