#pragma once
// The plain building blocks of the reference forward pass, one loop each (llama2.c's run.c style).
// Every dot product and every sum over a vector accumulates in double, so these are the numbers
// the fast kernels are compared against. Matrices are row-major [out][in]: row i is contiguous.

#include <cstdint>
#include <span>

#include "model/hparams.hpp"

namespace hearth::ref {

//! a (n,) . b (n,), accumulated in double.
double dot(std::span<const float> a, std::span<const float> b);
//! y (n,) += x (n,).
void add(std::span<float> y, std::span<const float> x);
//! W (d,n) @ x (n,) -> out (d,). `out` must not alias `x`.
void matvec(std::span<const float> w, std::span<const float> x, std::span<float> out);
//! x (n,) / sqrt(mean(x^2) + eps) * weight (n,) -> out (n,); the mean in double.
//! `out` may alias `x`.
void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> out);
//! In place over x (n >= 1,): exp(x - max) / sum, computed in double.
void softmax(std::span<float> x);
//! x * sigmoid(x).
float silu(float x);
//! GELU with the tanh approximation, ggml's formula: 0.5 x (1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))),
//! in double. (ggml's CPU backend reads it from a table of f16 inputs and outputs: within ~1e-3.)
float gelu(float x);
//! cap * tanh(x / cap) in place over x (soft-capping: scores and logits stay inside (-cap, cap)).
void softcap(std::span<float> x, float cap);

//! Angular frequency (radians per position) of rotary pair i of n_rot / 2: base^(-2i/n_rot),
//! divided by freq_factors[i] when the model scales its frequencies (empty = none).
double rope_freq(uint32_t i, uint32_t n_rot, float base, std::span<const float> freq_factors);
//! Rotates the first n_rot dims of one head (head_dim >= n_rot,) by pos * rope_freq(i) per pair;
//! pairs are (2i, 2i+1) for `adjacent` and (i, i + n_rot/2) for `halves`. n_rot is even. The
//! rotation is scaled by attn_factor (ggml's rope mscale: LongRoPE's magnitude correction).
void rope(std::span<float> head, uint32_t n_rot, uint32_t pos, float base, rope_pairing pairing,
          std::span<const float> freq_factors, float attn_factor = 1.0f);

}  // namespace hearth::ref
