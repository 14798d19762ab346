#pragma once
// The CPU backend's own kernels, the ones oneDNN does not provide: RMS norm, RoPE, the SwiGLU
// and GeGLU activations, soft-capping, and attention over the paged KV cache. Stateless; each matches its
// plain twin (reference_ops, reference_model::attend) within f32 rounding. Matrices are row-major f32; a
// row_view's rows may be strided, so the kernels read and write the q/k/v slices of a fused QKV
// projection (rows, q_dim + 2 kv_dim) in place.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/kv_pool.hpp"
#include "model/hparams.hpp"

namespace hearth::ops {

//! A row-major f32 matrix whose rows start `stride` floats apart.
template <class T>
struct row_view {
  T* data = nullptr;
  size_t stride = 0;  //!< floats between the starts of consecutive rows

  T* row(size_t r) const { return data + r * stride; }
};

//! x (rows, n) / sqrt(mean(x^2) + eps) * weight (n = weight.size(),) -> out (rows, n); f32
//! accumulation per row. `out` may alias `x`.
void rmsnorm(row_view<const float> x, std::span<const float> weight, float eps, row_view<float> out,
             uint32_t rows);

//! gate_up (rows, 2 n_ff) = [gate | up] -> out (rows, n_ff) = act(gate) * up: SwiGLU with silu,
//! Gemma's GeGLU with gelu (tanh approximation).
void gated_act(row_view<const float> gate_up, row_view<float> out, uint32_t rows, uint32_t n_ff,
               ffn_activation act);

//! x (rows, n) += y (rows, n): the residual adds, a prefill chunk's rows spread over the threads.
void add(row_view<float> x, row_view<const float> y, uint32_t rows, uint32_t n);

//! x = cap * tanh(x / cap) in place (cap > 0): gemma2's final logit soft-capping.
void softcap(std::span<float> x, float cap);

//! cos and sin of every rotary pair at every row's position: built once per batch, shared by q, k
//! and all layers. Angles pos * ref::rope_freq(i) are computed in double, as the reference does.
struct rope_table {
  uint32_t n_rot = 0;
  rope_pairing pairing = rope_pairing::adjacent;
  std::vector<float> cos;  //!< (rows, n_rot / 2)
  std::vector<float> sin;  //!< (rows, n_rot / 2)
};

//! The table for rows at `positions` (rows,); n_rot even, freq_factors empty or (n_rot / 2,);
//! every cos and sin times attn_factor (LongRoPE's scale, hparams::rope_attn_factor).
rope_table make_rope_table(std::span<const uint32_t> positions, uint32_t n_rot, float base,
                           rope_pairing pairing, std::span<const float> freq_factors,
                           float attn_factor = 1.0f);

//! Rotates, in place, the first t.n_rot dims of each head of x (rows, n_heads, head_dim), row r
//! by row r of the table. q and k heads lie side by side in a fused QKV row: one call does both.
void rope(row_view<float> x, uint32_t rows, uint32_t n_heads, uint32_t head_dim, const rope_table& t);

//! One sequence's rows in a batch: rows [first_row, first_row + n_rows) hold its positions
//! start_pos, start_pos + 1, ...; blocks is its block table, covering start_pos + n_rows positions.
struct seq_rows {
  uint32_t first_row = 0;
  uint32_t n_rows = 0;
  uint32_t start_pos = 0;
  std::span<const uint32_t> blocks;
};

//! Writes k and v (rows, n_head_kv * head_dim) of `layer` into each sequence's slots in the pool,
//! converted to the pool's dtype (bf16: round to nearest even).
void store_kv(kv_pool& pool, uint32_t layer, row_view<const float> k, row_view<const float> v,
              std::span<const seq_rows> seqs);

//! What a layer's attention changes in plain causal softmax(q k^T / sqrt(head_dim)) v.
struct attn_params {
  float scale = 0.0f;    //!< multiplies q.k; 0: 1 / sqrt(head_dim)
  float softcap = 0.0f;  //!< scores c tanh(s / c) before the softmax (gemma2); 0: none
  uint32_t window = 0;   //!< a row at p sees keys p - window < t <= p (sliding layers); 0: 0..p
  //! A bf16 pool's attention may multiply in bf16 where the CPU has vdpbf16ps
  //! (attention_bf16.hpp): queries and softmax weights rounded to bf16, twice the multiply-adds
  //! a cycle; prefill chunks fold packed tiles, decode rows the blocks in place. f32 pools are
  //! unchanged.
  bool in_bf16 = false;
};

//! Causal attention over the paged cache: for each row at position p, per head h,
//! out (rows, n_head * head_dim) = softmax(q_h k^T * scale) v over positions 0..p of the sequence
//! (or its window), k/v from kv head h / (n_head / n_head_kv) of `layer`. The rows' own k/v must
//! already be stored (store_kv). Online softmax over blocks, f32 accumulation; work is spread over
//! (sequence, kv head, chunk of rows) with parallel_for, each item reading its K/V tiles once.
void paged_attention(const kv_pool& pool, uint32_t layer, uint32_t n_head, row_view<const float> q,
                     row_view<float> out, std::span<const seq_rows> seqs, const attn_params& params = {});

//! Whether paged_attention folds decode rows over this layout in bf16 (attention_bf16.hpp):
//! params allow it, the pool is bf16, the CPU has vdpbf16ps, and the heads suit it.
bool decode_in_bf16(const kv_layout& layout, const attn_params& params);
//! The same for prefill chunks, whose packed tiles also ask blocks of at most 32 keys.
bool prefill_in_bf16(const kv_layout& layout, const attn_params& params);

}  // namespace hearth::ops
