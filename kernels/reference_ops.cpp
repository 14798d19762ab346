#include "kernels/reference_ops.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace hearth::ref {

double dot(std::span<const float> a, std::span<const float> b) {
  assert(a.size() == b.size() && "dot: length mismatch");
  double acc = 0.0;
  for (size_t i = 0; i < a.size(); ++i) acc += static_cast<double>(a[i]) * b[i];
  return acc;
}

void add(std::span<float> y, std::span<const float> x) {
  assert(y.size() == x.size() && "add: length mismatch");
  for (size_t i = 0; i < y.size(); ++i) y[i] += x[i];
}

void matvec(std::span<const float> w, std::span<const float> x, std::span<float> out) {
  // W (d,n) @ x (n,) -> out (d,)
  const size_t n = x.size();
  assert(w.size() == out.size() * n && "matvec: W is not (d,n)");
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<float>(dot(w.subspan(i * n, n), x));
  }
}

void rmsnorm(std::span<const float> x, std::span<const float> weight, float eps, std::span<float> out) {
  assert(x.size() == weight.size() && x.size() == out.size() && "rmsnorm: length mismatch");
  const double mean_sq = dot(x, x) / static_cast<double>(x.size());
  const double scale = 1.0 / std::sqrt(mean_sq + eps);
  // llama.cpp scales x first, then multiplies by the weight as a separate op.
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = static_cast<float>(x[i] * scale) * weight[i];
  }
}

void softmax(std::span<float> x) {
  assert(!x.empty() && "softmax of nothing");
  const float max = *std::max_element(x.begin(), x.end());
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v) - max);
  for (float& v : x) v = static_cast<float>(std::exp(static_cast<double>(v) - max) / sum);
}

float silu(float x) {
  return static_cast<float>(x / (1.0 + std::exp(-static_cast<double>(x))));
}

// 0.5 v (1 + tanh u) written as v sigmoid(2u): the same function, without the cancellation of
// 1 + tanh u (which is 0 in double below about v = -9).
float gelu(float x) {
  const double v = x;
  constexpr double sqrt_2_over_pi = 0.79788456080286535587989211986876;
  return static_cast<float>(v / (1.0 + std::exp(-2.0 * sqrt_2_over_pi * v * (1.0 + 0.044715 * v * v))));
}

void softcap(std::span<float> x, float cap) {
  for (float& v : x) v = static_cast<float>(cap * std::tanh(static_cast<double>(v) / cap));
}

double rope_freq(uint32_t i, uint32_t n_rot, float base, std::span<const float> freq_factors) {
  const double freq = std::pow(static_cast<double>(base), -2.0 * i / n_rot);
  return freq_factors.empty() ? freq : freq / freq_factors[i];
}

void rope(std::span<float> head, uint32_t n_rot, uint32_t pos, float base, rope_pairing pairing,
          std::span<const float> freq_factors, float attn_factor) {
  assert(n_rot % 2 == 0 && n_rot <= head.size() && "rope: bad n_rot");
  assert((freq_factors.empty() || freq_factors.size() == n_rot / 2) && "rope: one factor per pair");
  const uint32_t half = n_rot / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const double theta = pos * rope_freq(i, n_rot, base, freq_factors);
    const double c = std::cos(theta) * attn_factor, sn = std::sin(theta) * attn_factor;
    const size_t a = pairing == rope_pairing::adjacent ? 2 * i : i;
    const size_t b = pairing == rope_pairing::adjacent ? 2 * i + 1 : i + half;
    const double x0 = head[a], x1 = head[b];
    head[a] = static_cast<float>(x0 * c - x1 * sn);
    head[b] = static_cast<float>(x0 * sn + x1 * c);
  }
}

}  // namespace hearth::ref
