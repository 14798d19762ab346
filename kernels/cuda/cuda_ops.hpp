#pragma once
// The CUDA backend's own kernels (cuda_ops.cu): the steps of a forward that are not matrix
// products, each the twin of a CPU kernel (kernels/cpu_ops.hpp) and of the reference. Stateless
// launchers on a stream; no CUDA syntax here, so host code of any compiler includes it.
//
// Activations are f32, row-major, rows `stride` floats apart. What feeds a matrix product is
// written in the product's input type (`act`): f32, or bf16 rounded to nearest even.

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace hearth::cuda {

enum class act_type : uint8_t { f32, bf16 };

//! The paged pool's geometry (kernels/kv_store.hpp): block (n_layer, 2, n_head_kv, block_size, head_dim).
struct kv_geometry {
  uint32_t n_layer = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t block_size = 0;
  bool bf16 = true;  //!< elements in bf16, else f32
};

//! Where each row of an iteration sits, in device memory: its position, and its sequence's block
//! table as an offset into one array of every sequence's table.
struct row_table {
  const uint32_t* positions = nullptr;    //!< (rows,)
  const uint32_t* table_start = nullptr;  //!< (rows,) offset of the row's table in `tables`
  const uint32_t* tables = nullptr;
};

//! out = x / sqrt(mean(x^2) + eps) * w over vectors of n (n = w's length) with f32 accumulation:
//! `per_row` vectors side by side in each of `rows` rows (qwen3's per-head norms; 1 otherwise).
//! out may alias x when out_type is f32 and the strides agree.
void rmsnorm(const float* x, size_t x_stride, uint32_t per_row, const float* w, uint32_t n, float eps,
             void* out, act_type out_type, size_t out_stride, uint32_t rows, cudaStream_t s);

//! y (rows, n) += bias (n,) row by row.
void add_bias(float* y, size_t stride, const float* bias, uint32_t n, uint32_t rows, cudaStream_t s);

//! x += y over n floats (the residual).
void add(float* x, const float* y, size_t n, cudaStream_t s);

//! Rotates, in place, the first n_rot dims of each of n_heads heads of every row by the row's
//! position times freqs[i] (double, ref::rope_freq), cos and sin times attn_factor; pairs are
//! (2i, 2i + 1) or, with halves, (i, i + n_rot / 2).
void rope(float* x, size_t stride, uint32_t rows, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot,
          bool halves, const uint32_t* positions, const double* freqs, float attn_factor, cudaStream_t s);

//! Writes each row's k (at column k_col) and v (at v_col) of `layer` into its slot in the pool.
void store_kv(const float* qkv, size_t stride, uint32_t k_col, uint32_t v_col, uint32_t rows,
              const row_table& at, const kv_geometry& g, uint32_t layer, void* pool, cudaStream_t s);

struct attention_args {
  const float* q = nullptr;  //!< (rows, n_head * head_dim), rows `q_stride` floats apart
  size_t q_stride = 0;
  uint32_t n_head = 0;
  uint32_t rows = 0;
  uint32_t layer = 0;
  float scale = 0.0f;    //!< multiplies q.k
  float softcap = 0.0f;  //!< scores c tanh(s / c); 0: none
  uint32_t window = 0;   //!< keys p - window < t <= p; 0: 0..p
  void* out = nullptr;   //!< (rows, n_head * head_dim) in out_type, rows out_stride elements apart
  act_type out_type = act_type::f32;
  size_t out_stride = 0;
};

//! Causal attention of every row over its sequence's keys 0..p (or its window) in the pool, GQA
//! heads sharing a kv head: online softmax, f32 accumulation. The rows' own k/v must be stored.
void paged_attention(const attention_args& a, const row_table& at, const kv_geometry& g, const void* pool,
                     cudaStream_t s);

//! out (rows, n_ff) = act(gate) * up over gate_up (rows, 2 n_ff) = [gate | up]: silu, or gelu
//! with the tanh approximation.
void gated_act(const float* gate_up, uint32_t n_ff, uint32_t rows, bool gelu, void* out, act_type out_type,
               cudaStream_t s);

//! out (n, d) = x rows idx[0..n).
void gather_rows(const float* x, uint32_t d, const uint32_t* idx, uint32_t n, float* out, cudaStream_t s);

//! x = cap tanh(x / cap) in place.
void softcap(float* x, size_t n, float cap, cudaStream_t s);

}  // namespace hearth::cuda
