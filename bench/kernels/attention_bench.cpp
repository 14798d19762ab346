// Decode attention over the paged KV cache (bf16, block 16, Llama-3-8B heads: 32 query heads on
// 8 kv heads of 128; small's, 12 of 64; 1b's, 32 on 4 of 64) at several context lengths, against the memory
// bandwidth measured in the same run. Each call reads a different layer of a pool larger than the caches, so
// K/V come from memory as in a real decode step. Reports GB/s of K/V read against the triad ceiling, and FMA
// throughput against the core's FMA peak: with 4 query heads per kv head, decode attention does
// 4 multiply-adds per bf16 element read, so on AVX2 it is compute-bound before memory-bound. Where
// the CPU has vdpbf16ps, also the bf16 folds a bf16 model's decode rows take there.
// Then prefill chunks at small's heads and one at 1b's, against the FMA peak: a chunk deep in a long
// prompt; where the CPU has vdpbf16ps, also with the bf16 tiles a bf16 model's prefill takes there.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "bench/kernels/stream_triad.hpp"
#include "kernels/cpu_ops.hpp"
#include "kernels/dpbf16_matmul.hpp"
#include "kernels/parallel.hpp"
#include "kernels/simd.hpp"
#include "model/tensor_types.hpp"

using namespace hearth;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

//! Peak f32 multiply-adds per second (in billions) of one core: independent FMA chains, enough to
//! cover the FMA latency (4-5 cycles) on both FMA pipes, kept in registers. (A compiler barrier
//! on the array each iteration, as this once had, sends the chains through memory: store-to-load
//! forwarding then bounds them at half the peak.)
HEARTH_SIMD_CLONES
double fma_peak_gflops() {
  constexpr int chains = 12;  // + the two operands: 14 of AVX2's 16 registers
  simd::vec a[chains];
  for (int i = 0; i < chains; ++i) a[i] = simd::splat(0.1f * static_cast<float>(i));
  const simd::vec x = simd::splat(0.999999f), y = simd::splat(1e-3f);
  const long n = 50000000;
  const auto t0 = clock_type::now();
  for (long i = 0; i < n; ++i)
    for (auto& v : a) v = v * x + y;  // each chain is sequential: nothing to fold away
  const double dt = seconds_since(t0);
  simd::vec sum = a[0];
  for (int i = 1; i < chains; ++i) sum += a[i];
  std::printf("(fma check %.3f)\n", simd::hsum(sum));  // every chain is used
  return double(chains) * n * simd::lanes / dt / 1e9;
}

//! A pool of n_blocks blocks of random bf16 values in [2^-7, 1], and its block ids shuffled: a
//! sequence's blocks lie anywhere, as in a real pool.
kv_pool random_pool(const kv_layout& layout, uint32_t n_blocks, uint32_t seed, std::vector<uint32_t>& ids) {
  auto pool = kv_pool::create(layout, n_blocks).value();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint16_t> bits(0x3c00, 0x3f80);
  for (uint32_t b = 0; b < pool.n_blocks(); ++b) {
    auto bytes = pool.block(b);
    auto* p = reinterpret_cast<uint16_t*>(bytes.data());
    for (size_t i = 0; i < bytes.size() / 2; ++i) p[i] = bits(rng);
  }
  ids.resize(pool.n_blocks());
  std::iota(ids.begin(), ids.end(), 0u);
  std::shuffle(ids.begin(), ids.end(), rng);
  return pool;
}

//! Seconds per paged_attention call over `seqs`, each call on the next layer of the pool.
double seconds_per_call(const kv_pool& pool, uint32_t n_head, std::span<const ops::seq_rows> seqs,
                        size_t rows, int calls, const ops::attn_params& params = {}) {
  const uint32_t q_dim = n_head * pool.layout().head_dim;
  std::vector<float> q(rows * q_dim, 0.1f), out(q.size());
  const auto t0 = clock_type::now();
  for (int i = 0; i < calls; ++i) {
    ops::paged_attention(pool, static_cast<uint32_t>(i) % pool.layout().n_layer, n_head, {q.data(), q_dim},
                         {out.data(), q_dim}, seqs, params);
  }
  return seconds_since(t0) / calls;
}

//! Attention heads: query heads, kv heads, head_dim.
struct heads {
  const char* name;
  uint32_t n_head, n_head_kv, hd;
};
constexpr heads llama3_8b{"llama3-8b", 32, 8, 128};
constexpr heads small{"small", 12, 12, 64};
constexpr heads one_b{"1b", 32, 4, 64};  // 8 query heads a kv head

void bench_decode(const heads& h, uint32_t ctx, uint32_t n_seqs, double ceiling, double fma_peak) {
  const uint32_t n_head = h.n_head, n_head_kv = h.n_head_kv, hd = h.hd, bs = 16;
  // Enough layers for 64 MiB of K/V, twice this machine's L3: small at context 256 has 0.75 MiB a layer.
  const double layer_bytes = 2.0 * 2 * ctx * n_head_kv * hd * n_seqs;
  const auto n_layer = static_cast<uint32_t>(std::max(16.0, std::ceil(64.0 * (1 << 20) / layer_bytes)));
  const kv_layout layout{
      .n_layer = n_layer, .n_head_kv = n_head_kv, .head_dim = hd, .block_size = bs, .dtype = kv_dtype::bf16};
  const uint32_t per_seq = kv_pool::blocks_for_tokens(layout, ctx);
  std::vector<uint32_t> ids;
  const kv_pool pool = random_pool(layout, per_seq * n_seqs, 42, ids);
  std::vector<ops::seq_rows> seqs;
  for (uint32_t s = 0; s < n_seqs; ++s) {
    seqs.push_back({s, 1, ctx - 1, std::span(ids).subspan(size_t{s} * per_seq, per_seq)});
  }
  const double bytes = 2.0 * 2 * ctx * n_head_kv * hd * n_seqs;  // K and V, bf16
  const double per_call =
      seconds_per_call(pool, n_head, seqs, n_seqs, std::max(16, static_cast<int>(4e9 / bytes)));
  const double gbps = bytes / per_call / 1e9;
  const double gfma = 2.0 * ctx * n_head * hd * n_seqs / per_call / 1e9;  // q.k and p * v
  std::printf(
      "decode %-9s ctx %5u x %2u seq: %8.1f us/layer, K/V %5.1f GB/s = %3.0f%% of triad, %5.1f GFMA/s = "
      "%3.0f%% of peak",
      h.name, ctx, n_seqs, per_call * 1e6, gbps, 100.0 * gbps / ceiling, gfma, 100.0 * gfma / fma_peak);
  if (dpbf16_available()) {  // what a bf16 model runs here: the tiles read in place, in bf16
    const double bf16 = seconds_per_call(pool, n_head, seqs, n_seqs,
                                         std::max(16, static_cast<int>(4e9 / bytes)), {.in_bf16 = true});
    std::printf("; bf16 %8.1f us/layer, %3.0f%% of triad, %.2f x", bf16 * 1e6,
                100.0 * bytes / bf16 / 1e9 / ceiling, per_call / bf16);
  }
  std::printf("\n");
}

//! A prefill chunk of `rows` rows of one sequence at start_pos: the chunk a household step adds
//! to a long document's prompt.
void bench_prefill(const heads& h, uint32_t start_pos, uint32_t rows, double fma_peak) {
  const uint32_t n_head = h.n_head, hd = h.hd, bs = 16, n_layer = 4;
  const kv_layout layout{.n_layer = n_layer,
                         .n_head_kv = h.n_head_kv,
                         .head_dim = hd,
                         .block_size = bs,
                         .dtype = kv_dtype::bf16};
  std::vector<uint32_t> ids;
  const kv_pool pool = random_pool(layout, kv_pool::blocks_for_tokens(layout, start_pos + rows), 7, ids);
  const std::vector<ops::seq_rows> seqs{{0, rows, start_pos, ids}};
  double keys = 0;
  for (uint32_t r = 0; r < rows; ++r) keys += start_pos + r + 1;
  const double fma = 2.0 * keys * n_head * hd;  // q.k and p * v
  const int calls = std::max(8, static_cast<int>(2e9 / fma));
  const double per_call = seconds_per_call(pool, n_head, seqs, rows, calls);
  std::printf("prefill %-5s %3u rows at %5u: %8.1f us/layer, %5.1f GFMA/s = %3.0f%% of peak", h.name, rows,
              start_pos, per_call * 1e6, fma / per_call / 1e9, 100.0 * fma / per_call / 1e9 / fma_peak);
  if (dpbf16_available()) {  // what a bf16 model runs here
    const double bf16 = seconds_per_call(pool, n_head, seqs, rows, calls, {.in_bf16 = true});
    std::printf("; bf16 tiles %8.1f us/layer, %5.1f GFMA/s, %.2f x", bf16 * 1e6, fma / bf16 / 1e9,
                per_call / bf16);
  }
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  set_kernel_threads(argc > 1 ? std::atoi(argv[1]) : 1);         // threads: one core unless told
  const double ceiling = stream_triad_gbps(size_t{8} << 20, 5);  // 3 x 64 MiB of doubles
  const double fma_peak = fma_peak_gflops() * kernel_threads();  // one core's, times the threads
  std::printf("triad bandwidth: %.1f GB/s, FMA peak: %.1f GFMA/s (%d cores)\n", ceiling, fma_peak,
              kernel_threads());
  for (uint32_t ctx : {1024u, 4096u}) bench_decode(llama3_8b, ctx, 1, ceiling, fma_peak);
  bench_decode(llama3_8b, 1024, 8, ceiling, fma_peak);
  for (uint32_t ctx : {256u, 1024u}) bench_decode(small, ctx, 1, ceiling, fma_peak);
  bench_decode(small, 256, 16, ceiling, fma_peak);
  for (uint32_t ctx : {256u, 2048u}) bench_decode(one_b, ctx, 1, ceiling, fma_peak);
  for (uint32_t start : {0u, 2048u}) bench_prefill(small, start, 32, fma_peak);
  bench_prefill(small, 0, 256, fma_peak);
  bench_prefill(small, 1024, 256, fma_peak);
  bench_prefill(one_b, 1024, 256, fma_peak);
  return 0;
}
