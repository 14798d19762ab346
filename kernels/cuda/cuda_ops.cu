// The CUDA backend's own kernels (cuda_ops.hpp). Written for clarity first: one thread per
// element for the elementwise steps, one block per row for the norms, one block per (row, head)
// for attention; every launch is checked by the caller's cudaGetLastError at the step's end.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "kernels/cuda/cuda_ops.hpp"

namespace hearth::cuda {
namespace {

constexpr uint32_t threads = 256;

__host__ __device__ constexpr uint32_t blocks_for(size_t n, uint32_t per = threads) {
  return static_cast<uint32_t>((n + per - 1) / per);
}

__device__ float load(const float* p) {
  return *p;
}
__device__ float load(const __nv_bfloat16* p) {
  return __bfloat162float(*p);
}

__device__ void store(float* p, float v) {
  *p = v;
}
__device__ void store(__nv_bfloat16* p, float v) {
  *p = __float2bfloat16_rn(v);
}

__device__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), on every thread.
__device__ float block_sum(float v) {
  __shared__ float partial[32];
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_sum(v);
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = lane < blockDim.x / 32 ? partial[lane] : 0.0f;
  return warp_sum(v);
}

template <class Out>
__global__ void rmsnorm_kernel(const float* x, size_t x_stride, uint32_t per_row, const float* w, uint32_t n,
                               float eps, Out* out, size_t out_stride) {
  const uint32_t v = blockIdx.x, r = v / per_row, j = v % per_row;
  const float* in = x + r * x_stride + size_t{j} * n;
  Out* o = out + r * out_stride + size_t{j} * n;
  float ss = 0.0f;
  for (uint32_t e = threadIdx.x; e < n; e += blockDim.x) ss += in[e] * in[e];
  // Correctly rounded, as the CPU's 1 / sqrt (rsqrtf is not).
  const float inv = 1.0f / sqrtf(block_sum(ss) / static_cast<float>(n) + eps);
  for (uint32_t e = threadIdx.x; e < n; e += blockDim.x) store(o + e, in[e] * inv * w[e]);
}

__global__ void add_bias_kernel(float* y, size_t stride, const float* bias, uint32_t n, uint32_t rows) {
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= size_t{rows} * n) return;
  y[(i / n) * stride + i % n] += bias[i % n];
}

__global__ void add_kernel(float* x, const float* y, size_t n) {
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// One thread per (row, head, pair); the angle in double, as the reference computes it.
__global__ void rope_kernel(float* x, size_t stride, uint32_t rows, uint32_t n_heads, uint32_t head_dim,
                            uint32_t n_rot, bool halves, const uint32_t* positions, const double* freqs,
                            float attn_factor) {
  const uint32_t pairs = n_rot / 2;
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= size_t{rows} * n_heads * pairs) return;
  const uint32_t p = static_cast<uint32_t>(i % pairs);
  const size_t rh = i / pairs;
  const size_t r = rh / n_heads, h = rh % n_heads;
  double sn = 0.0, cs = 0.0;
  sincos(static_cast<double>(positions[r]) * freqs[p], &sn, &cs);
  const float c = static_cast<float>(cs * attn_factor), s = static_cast<float>(sn * attn_factor);
  float* head = x + r * stride + h * head_dim;
  const uint32_t a = halves ? p : 2 * p, b = halves ? p + pairs : 2 * p + 1;
  const float x0 = head[a], x1 = head[b];
  head[a] = x0 * c - x1 * s;
  head[b] = x0 * s + x1 * c;
}

// The element offset of (block, layer, kv, head)'s tile: block (n_layer, 2, n_head_kv, block_size, head_dim).
__device__ size_t tile_offset(const kv_geometry& g, uint32_t block, uint32_t layer, uint32_t kv,
                              uint32_t head) {
  const size_t tile = size_t{g.block_size} * g.head_dim;
  return ((size_t{block} * g.n_layer + layer) * 2 + kv) * g.n_head_kv * tile + size_t{head} * tile;
}

template <class KV>
__global__ void store_kv_kernel(const float* qkv, size_t stride, uint32_t k_col, uint32_t v_col,
                                uint32_t rows, row_table at, kv_geometry g, uint32_t layer, KV* pool) {
  const uint32_t kv_dim = g.n_head_kv * g.head_dim;
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= size_t{rows} * kv_dim) return;
  const size_t r = i / kv_dim;
  const uint32_t e = static_cast<uint32_t>(i % kv_dim), head = e / g.head_dim, d = e % g.head_dim;
  const uint32_t pos = at.positions[r];
  const uint32_t block = at.tables[at.table_start[r] + pos / g.block_size];
  const size_t slot = size_t{pos % g.block_size} * g.head_dim + d;
  store(pool + tile_offset(g, block, layer, 0, head) + slot, qkv[r * stride + k_col + e]);
  store(pool + tile_offset(g, block, layer, 1, head) + slot, qkv[r * stride + v_col + e]);
}

constexpr uint32_t attn_warps = 4;
constexpr uint32_t max_head_dim = 256;
constexpr uint32_t dims_per_lane = max_head_dim / 32;

// One block per (row, head); its warps take every attn_warps-th key, each keeping an online
// softmax (running max m, sum l, and the weighted values of the dims its lanes own), then the
// warps' states are merged. Lane j owns dims j, j + 32, ...
template <class KV, class Out>
__global__ void __launch_bounds__(attn_warps * 32)
    attention_kernel(attention_args a, row_table at, kv_geometry g, const KV* pool) {
  const uint32_t r = blockIdx.x, h = blockIdx.y, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const uint32_t hd = g.head_dim, kv_head = h / (a.n_head / g.n_head_kv);
  const uint32_t pos = at.positions[r];
  const uint32_t* table = at.tables + at.table_start[r];
  const uint32_t first = a.window > 0 && pos + 1 > a.window ? pos + 1 - a.window : 0;
  const float* q = a.q + size_t{r} * a.q_stride + size_t{h} * hd;
  float qv[dims_per_lane], acc[dims_per_lane];
#pragma unroll
  for (uint32_t i = 0; i < dims_per_lane; ++i) {
    const uint32_t d = lane + 32 * i;
    qv[i] = d < hd ? q[d] : 0.0f;
    acc[i] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  for (uint32_t t = first + warp; t <= pos; t += attn_warps) {
    const uint32_t block = table[t / g.block_size];
    const size_t slot = size_t{t % g.block_size} * hd;
    const KV* k = pool + tile_offset(g, block, a.layer, 0, kv_head) + slot;
    const KV* v = pool + tile_offset(g, block, a.layer, 1, kv_head) + slot;
    float dot = 0.0f;
#pragma unroll
    for (uint32_t i = 0; i < dims_per_lane; ++i) {
      const uint32_t d = lane + 32 * i;
      if (d < hd) dot += qv[i] * load(k + d);
    }
    float s = warp_sum(dot) * a.scale;
    if (a.softcap > 0.0f) s = a.softcap * tanhf(s / a.softcap);
    const float m_new = fmaxf(m, s), correction = expf(m - m_new), p = expf(s - m_new);
    l = l * correction + p;
#pragma unroll
    for (uint32_t i = 0; i < dims_per_lane; ++i) {
      const uint32_t d = lane + 32 * i;
      acc[i] = acc[i] * correction + (d < hd ? p * load(v + d) : 0.0f);
    }
    m = m_new;
  }
  __shared__ float warp_m[attn_warps], warp_l[attn_warps];
  __shared__ float warp_acc[attn_warps][max_head_dim];
  if (lane == 0) {
    warp_m[warp] = m;
    warp_l[warp] = l;
  }
#pragma unroll
  for (uint32_t i = 0; i < dims_per_lane; ++i) {
    const uint32_t d = lane + 32 * i;
    if (d < hd) warp_acc[warp][d] = acc[i];
  }
  __syncthreads();
  // A warp that saw no key has m = -FLT_MAX and l = 0: its weight below is 0.
  float m_all = warp_m[0];
  for (uint32_t w = 1; w < attn_warps; ++w) m_all = fmaxf(m_all, warp_m[w]);
  float l_all = 0.0f;
  for (uint32_t w = 0; w < attn_warps; ++w) l_all += warp_l[w] * expf(warp_m[w] - m_all);
  Out* out = static_cast<Out*>(a.out) + size_t{r} * a.out_stride + size_t{h} * hd;
  for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x) {
    float sum = 0.0f;
    for (uint32_t w = 0; w < attn_warps; ++w) sum += warp_acc[w][d] * expf(warp_m[w] - m_all);
    store(out + d, sum / l_all);
  }
}

// As the reference: silu x / (1 + e^-x); gelu's tanh form as x sigmoid(2u).
template <class Out>
__global__ void gated_act_kernel(const float* gate_up, uint32_t n_ff, uint32_t rows, bool gelu, Out* out) {
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= size_t{rows} * n_ff) return;
  const size_t r = i / n_ff, j = i % n_ff;
  const float g = gate_up[r * 2 * n_ff + j], u = gate_up[r * 2 * n_ff + n_ff + j];
  constexpr float sqrt_2_over_pi = 0.7978845608028654f;
  const float z = gelu ? 2.0f * sqrt_2_over_pi * g * (1.0f + 0.044715f * g * g) : g;
  store(out + i, g / (1.0f + expf(-z)) * u);
}

__global__ void gather_kernel(const float* x, uint32_t d, const uint32_t* idx, uint32_t n, float* out) {
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= size_t{n} * d) return;
  out[i] = x[size_t{idx[i / d]} * d + i % d];
}

__global__ void softcap_kernel(float* x, size_t n, float cap) {
  const size_t i = size_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) x[i] = cap * tanhf(x[i] / cap);
}

}  // namespace

void rmsnorm(const float* x, size_t x_stride, uint32_t per_row, const float* w, uint32_t n, float eps,
             void* out, act_type out_type, size_t out_stride, uint32_t rows, cudaStream_t s) {
  const uint32_t grid = rows * per_row, block = n >= 1024 ? 1024 : (n + 31) / 32 * 32;
  if (grid == 0) return;
  if (out_type == act_type::bf16)
    rmsnorm_kernel<<<grid, block, 0, s>>>(x, x_stride, per_row, w, n, eps, static_cast<__nv_bfloat16*>(out),
                                          out_stride);
  else
    rmsnorm_kernel<<<grid, block, 0, s>>>(x, x_stride, per_row, w, n, eps, static_cast<float*>(out),
                                          out_stride);
}

void add_bias(float* y, size_t stride, const float* bias, uint32_t n, uint32_t rows, cudaStream_t s) {
  if (const uint32_t grid = blocks_for(size_t{rows} * n))
    add_bias_kernel<<<grid, threads, 0, s>>>(y, stride, bias, n, rows);
}

void add(float* x, const float* y, size_t n, cudaStream_t s) {
  if (const uint32_t grid = blocks_for(n)) add_kernel<<<grid, threads, 0, s>>>(x, y, n);
}

void rope(float* x, size_t stride, uint32_t rows, uint32_t n_heads, uint32_t head_dim, uint32_t n_rot,
          bool halves, const uint32_t* positions, const double* freqs, float attn_factor, cudaStream_t s) {
  if (const uint32_t grid = blocks_for(size_t{rows} * n_heads * (n_rot / 2)))
    rope_kernel<<<grid, threads, 0, s>>>(x, stride, rows, n_heads, head_dim, n_rot, halves, positions, freqs,
                                         attn_factor);
}

void store_kv(const float* qkv, size_t stride, uint32_t k_col, uint32_t v_col, uint32_t rows,
              const row_table& at, const kv_geometry& g, uint32_t layer, void* pool, cudaStream_t s) {
  const uint32_t grid = blocks_for(size_t{rows} * g.n_head_kv * g.head_dim);
  if (grid == 0) return;
  if (g.bf16)
    store_kv_kernel<<<grid, threads, 0, s>>>(qkv, stride, k_col, v_col, rows, at, g, layer,
                                             static_cast<__nv_bfloat16*>(pool));
  else
    store_kv_kernel<<<grid, threads, 0, s>>>(qkv, stride, k_col, v_col, rows, at, g, layer,
                                             static_cast<float*>(pool));
}

void paged_attention(const attention_args& a, const row_table& at, const kv_geometry& g, const void* pool,
                     cudaStream_t s) {
  if (a.rows == 0) return;
  const dim3 grid(a.rows, a.n_head), block(attn_warps * 32);
  const bool out_bf16 = a.out_type == act_type::bf16;
  if (g.bf16 && out_bf16)
    attention_kernel<__nv_bfloat16, __nv_bfloat16>
        <<<grid, block, 0, s>>>(a, at, g, static_cast<const __nv_bfloat16*>(pool));
  else if (g.bf16)
    attention_kernel<__nv_bfloat16, float>
        <<<grid, block, 0, s>>>(a, at, g, static_cast<const __nv_bfloat16*>(pool));
  else if (out_bf16)
    attention_kernel<float, __nv_bfloat16><<<grid, block, 0, s>>>(a, at, g, static_cast<const float*>(pool));
  else
    attention_kernel<float, float><<<grid, block, 0, s>>>(a, at, g, static_cast<const float*>(pool));
}

void gated_act(const float* gate_up, uint32_t n_ff, uint32_t rows, bool gelu, void* out, act_type out_type,
               cudaStream_t s) {
  const uint32_t grid = blocks_for(size_t{rows} * n_ff);
  if (grid == 0) return;
  if (out_type == act_type::bf16)
    gated_act_kernel<<<grid, threads, 0, s>>>(gate_up, n_ff, rows, gelu, static_cast<__nv_bfloat16*>(out));
  else
    gated_act_kernel<<<grid, threads, 0, s>>>(gate_up, n_ff, rows, gelu, static_cast<float*>(out));
}

void gather_rows(const float* x, uint32_t d, const uint32_t* idx, uint32_t n, float* out, cudaStream_t s) {
  if (const uint32_t grid = blocks_for(size_t{n} * d))
    gather_kernel<<<grid, threads, 0, s>>>(x, d, idx, n, out);
}

void softcap(float* x, size_t n, float cap, cudaStream_t s) {
  if (const uint32_t grid = blocks_for(n)) softcap_kernel<<<grid, threads, 0, s>>>(x, n, cap);
}

}  // namespace hearth::cuda
