#pragma once
// What one forward of a model costs, by its shapes alone: the linear layers of one token, and
// FLOPs counted 2 per multiply-add. A forward of T new tokens at positions [p, p + T):
//   linears   2 T (n_layer (qkv + wo + gate_up + down params)) + 2 R vocab d, R = rows with logits
//   attention 2 head_dim n_head n_layer per (query, key) pair for QK^T and again for PV; causal
//             prefill from position 0 has T (T + 1) / 2 pairs per head.
// Norms, RoPE, SwiGLU and softmax are left out (a few FLOPs per element, well under 1%). Shared
// by the CPU and CUDA kernel benches.

#include <cstdint>
#include <vector>

#include "model/hparams.hpp"

namespace hearth {

//! A linear layer of one token's forward: its shape and how many of it (per layer, or the head once).
struct linear_shape {
  const char* name;
  uint32_t n_in, n_out, count;
};

//! qkv, wo, gate_up, down (n_layer each) and head.
std::vector<linear_shape> model_shapes(const hparams& hp);

//! GFLOP of a prefill of t tokens from position 0 (one row of logits).
double prefill_gflop(const hparams& hp, uint32_t t);

//! GFLOP of one decode iteration: `batch` tokens, each attending to context + 1 positions.
double decode_gflop(const hparams& hp, uint32_t batch, uint32_t context);

//! The median (the upper one of an even count); 0 for none.
double median(std::vector<double> v);

}  // namespace hearth
