// ops::paged_attention (with ops::store_kv) against dense causal attention in double over
// contiguous K/V: decode and prefill rows of several sequences in one call, MHA and GQA, several
// head and block sizes, shuffled block tables, f32 and bf16 pools.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <numeric>
#include <random>
#include <vector>

#include "kernel_threads_scope.hpp"
#include "kernels/attention_tile.hpp"
#include "kernels/cpu_ops.hpp"
#include "kernels/dpbf16_matmul.hpp"
#include "kernels/parallel.hpp"
#include "model/tensor_types.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

struct attn_shape {
  uint32_t n_head, n_head_kv, head_dim, block_size;
  uint32_t q_dim() const { return n_head * head_dim; }
  uint32_t kv_dim() const { return n_head_kv * head_dim; }
};

//! One sequence: keys and values of all its positions (start_pos + n_new, kv_dim); the last n_new
//! are the batch's rows.
struct test_seq {
  uint32_t start_pos, n_new, first_row;
  std::vector<float> k, v;
};

//! A batch as the backend holds it: fused rows (rows, q_dim + 2 kv_dim) = [q | k | v].
struct test_batch {
  attn_shape shape;
  std::vector<test_seq> seqs;
  uint32_t rows = 0;
  std::vector<float> qkv;

  size_t stride() const { return shape.q_dim() + 2 * size_t{shape.kv_dim()}; }
};

// A standard normal draw (Box-Muller over two of the generator's words). std::normal_distribution
// draws through generate_canonical, whose long-double log the sanitizer build's -O0 copy ran at
// every draw: two fifths of the bf16 tiles test's time there.
float normal(std::mt19937& rng) {
  const double u1 = (rng() + 1.0) * 0x1p-32, u2 = rng() * 0x1p-32;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

test_batch make_batch(std::mt19937& rng, const attn_shape& shape,
                      const std::vector<std::pair<uint32_t, uint32_t>>& lengths, float q_scale) {
  test_batch b{shape, {}, 0, {}};
  const uint32_t kv_dim = shape.kv_dim();
  for (auto [start, n_new] : lengths) {
    test_seq s{start, n_new, b.rows, {}, {}};
    s.k.resize(size_t{start + n_new} * kv_dim);
    s.v.resize(s.k.size());
    for (float& x : s.k) x = normal(rng);
    for (float& x : s.v) x = normal(rng);
    b.rows += n_new;
    b.seqs.push_back(std::move(s));
  }
  b.qkv.resize(b.rows * b.stride());
  for (const test_seq& s : b.seqs) {
    for (uint32_t i = 0; i < s.n_new; ++i) {
      float* row = b.qkv.data() + (s.first_row + i) * b.stride();
      for (uint32_t e = 0; e < shape.q_dim(); ++e) row[e] = q_scale * normal(rng);
      std::copy_n(s.k.data() + size_t{s.start_pos + i} * kv_dim, kv_dim, row + shape.q_dim());
      std::copy_n(s.v.data() + size_t{s.start_pos + i} * kv_dim, kv_dim, row + shape.q_dim() + kv_dim);
    }
  }
  return b;
}

//! Stores the cached positions, then the batch's rows (as a backend would), into a pool whose
//! blocks are handed out in shuffled or in increasing order, and runs paged attention on layer 1.
std::vector<float> run_paged(const test_batch& b, kv_dtype dtype, bool shuffled, uint32_t shuffle_seed,
                             const ops::attn_params& params = {}) {
  const attn_shape& sh = b.shape;
  const kv_layout layout{.n_layer = 2,
                         .n_head_kv = sh.n_head_kv,
                         .head_dim = sh.head_dim,
                         .block_size = sh.block_size,
                         .dtype = dtype};
  std::vector<std::vector<uint32_t>> tables;
  uint32_t n_blocks = 3;  // a few unused ones
  for (const test_seq& s : b.seqs) n_blocks += kv_pool::blocks_for_tokens(layout, s.start_pos + s.n_new);
  std::vector<uint32_t> ids(n_blocks);
  std::iota(ids.begin(), ids.end(), 0u);
  if (shuffled) std::shuffle(ids.begin(), ids.end(), std::mt19937(shuffle_seed));
  auto pool = kv_pool::create(layout, n_blocks).value();
  std::vector<ops::seq_rows> rows;
  size_t next = 0;
  for (const test_seq& s : b.seqs) {
    const uint32_t n = kv_pool::blocks_for_tokens(layout, s.start_pos + s.n_new);
    tables.emplace_back(ids.begin() + static_cast<ptrdiff_t>(next),
                        ids.begin() + static_cast<ptrdiff_t>(next + n));
    next += n;
    const ops::seq_rows cached{0, s.start_pos, 0, tables.back()};
    ops::store_kv(pool, 1, {s.k.data(), sh.kv_dim()}, {s.v.data(), sh.kv_dim()}, {&cached, 1});
    rows.push_back({s.first_row, s.n_new, s.start_pos, tables.back()});
  }
  const float* q = b.qkv.data();
  ops::store_kv(pool, 1, {q + sh.q_dim(), b.stride()}, {q + sh.q_dim() + sh.kv_dim(), b.stride()}, rows);
  std::vector<float> out(size_t{b.rows} * sh.q_dim(), NAN);
  ops::paged_attention(pool, 1, sh.n_head, {q, b.stride()}, {out.data(), sh.q_dim()}, rows, params);
  return out;
}

float bf16_round(float x) {
  return bf16_to_fp32(fp32_to_bf16(x));
}

//! Dense causal attention in double, (rows, q_dim); K/V rounded to bf16 first when asked, and the
//! queries times the scale (in float) too in the rows round_q holds true (none if empty). With
//! params: scores times the scale, c tanh(s / c) when capped, keys p - window < t <= p only.
std::vector<double> dense_attention(const test_batch& b, bool round_kv, const ops::attn_params& params = {},
                                    const std::vector<bool>& round_q = {}) {
  const attn_shape& sh = b.shape;
  const uint32_t hd = sh.head_dim, group = sh.n_head / sh.n_head_kv;
  std::vector<double> out(size_t{b.rows} * sh.q_dim());
  for (const test_seq& s : b.seqs) {
    auto kv_at = [&](const std::vector<float>& m, uint32_t pos, uint32_t kvh, uint32_t d) {
      const float x = m[size_t{pos} * sh.kv_dim() + kvh * hd + d];
      return static_cast<double>(round_kv ? bf16_round(x) : x);
    };
    for (uint32_t i = 0; i < s.n_new; ++i) {
      const uint32_t pos = s.start_pos + i;
      const float* q = b.qkv.data() + (s.first_row + i) * b.stride();
      const bool round_row = !round_q.empty() && round_q[s.first_row + i];
      const uint32_t first = params.window != 0 && pos + 1 > params.window ? pos + 1 - params.window : 0;
      for (uint32_t h = 0; h < sh.n_head; ++h) {
        std::vector<double> score(pos + 1, -INFINITY);
        const double scale = params.scale > 0 ? params.scale : 1.0 / std::sqrt(static_cast<double>(hd));
        const auto q_at = [&](uint32_t d) {
          return round_row ? bf16_round(q[h * hd + d] * static_cast<float>(scale)) / scale
                           : double{q[h * hd + d]};
        };
        for (uint32_t t = first; t <= pos; ++t) {
          score[t] = 0.0;
          for (uint32_t d = 0; d < hd; ++d) score[t] += q_at(d) * kv_at(s.k, t, h / group, d);
          score[t] *= scale;
          if (params.softcap > 0) score[t] = params.softcap * std::tanh(score[t] / params.softcap);
        }
        const double max = *std::max_element(score.begin(), score.end());
        double sum = 0.0;
        for (double& x : score) sum += (x = std::exp(x - max));
        for (uint32_t d = 0; d < hd; ++d) {
          double acc = 0.0;
          for (uint32_t t = first; t <= pos; ++t) acc += score[t] / sum * kv_at(s.v, t, h / group, d);
          out[(s.first_row + i) * size_t{sh.q_dim()} + h * hd + d] = acc;
        }
      }
    }
  }
  return out;
}

//! Worst over (row, head) of max |got - want| / max |want| within that head's output.
double max_rel_error(const std::vector<float>& got, const std::vector<double>& want, uint32_t head_dim) {
  double worst = 0.0;
  for (size_t off = 0; off < want.size(); off += head_dim) {
    double err = 0.0, mag = 1e-30;
    for (size_t d = off; d < off + head_dim; ++d) {
      err = std::max(err, std::fabs(got[d] - want[d]));  // NaN (an unwritten output) fails below
      if (std::isnan(got[d])) err = INFINITY;
      mag = std::max(mag, std::fabs(want[d]));
    }
    worst = std::max(worst, err / mag);
  }
  return worst;
}

//! Whether the kernel folds each row's queries in bf16, rounded (paged_attention.cpp): rows in items
//! of 64 (its rows_per_item) holding more than max_queries_per_fold queries a kv head fold packed
//! tiles, in bf16 only where prefill_in_bf16 (tiles of up to 128 keys: not blocks of 160 or 256);
//! other rows fold their blocks in place, in bf16 where decode_in_bf16.
std::vector<bool> rows_in_bf16(const test_batch& b, const ops::attn_params& params) {
  const kv_layout lay{.n_layer = 2,
                      .n_head_kv = b.shape.n_head_kv,
                      .head_dim = b.shape.head_dim,
                      .block_size = b.shape.block_size,
                      .dtype = kv_dtype::bf16};
  const uint32_t group = b.shape.n_head / b.shape.n_head_kv;
  std::vector<bool> out(b.rows);
  for (const test_seq& s : b.seqs) {
    for (uint32_t row0 = 0; row0 < s.n_new; row0 += 64) {
      const uint32_t n = std::min(64u, s.n_new - row0);
      const bool tiles = n > 1 && n * group > ops::attention_tile::max_queries_per_fold;
      const bool bf16 = tiles ? ops::prefill_in_bf16(lay, params) : ops::decode_in_bf16(lay, params);
      for (uint32_t i = row0; i < row0 + n; ++i) out[s.first_row + i] = bf16;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("paged attention matches dense attention", "[cpu_ops][attention]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto shape = GENERATE(attn_shape{4, 4, 16, 16}, attn_shape{4, 2, 48, 1}, attn_shape{8, 1, 64, 32},
                              attn_shape{4, 1, 128, 16}, attn_shape{6, 2, 128, 32}, attn_shape{2, 2, 64, 1},
                              attn_shape{8, 2, 16, 32}, attn_shape{4, 2, 40, 16});
  CAPTURE(shape.n_head, shape.n_head_kv, shape.head_dim, shape.block_size);
  // Decode rows at block edges and deep in the context, prefill chunks from 0 and after a cached
  // prefix (one crossing the 64-row work items, from mid-block), and two random sequences.
  std::vector<std::pair<uint32_t, uint32_t>> lengths{{0, 1},   {5, 1},  {16, 1},  {33, 1},
                                                     {600, 1}, {0, 37}, {40, 17}, {21, 90}};
  std::uniform_int_distribution<uint32_t> start(0, 200), n_new(1, 40);
  for (int i = 0; i < 2; ++i) lengths.emplace_back(start(rng), n_new(rng));
  for (const auto& [s, n] : lengths) INFO("sequence at " << s << " + " << n);
  const test_batch b = make_batch(rng, shape, lengths, 1.0f);
  const auto exact = dense_attention(b, false);
  const auto rounded = dense_attention(b, true);
  const uint32_t shuffle_seed = rng();

  const auto f32 = run_paged(b, kv_dtype::f32, true, shuffle_seed);
  CHECK(max_rel_error(f32, exact, shape.head_dim) <= 1e-5);
  CHECK(run_paged(b, kv_dtype::f32, false, shuffle_seed) == f32);

  const auto bf16 = run_paged(b, kv_dtype::bf16, true, shuffle_seed);
  CHECK(max_rel_error(bf16, rounded, shape.head_dim) <= 1e-3);
  CHECK(max_rel_error(bf16, exact, shape.head_dim) <= 2e-2);
  CHECK(run_paged(b, kv_dtype::bf16, false, shuffle_seed) == bf16);

  // Scores of a few tens: each block moves the running max far, and most weights underflow.
  const test_batch peaky = make_batch(rng, shape, lengths, 8.0f);
  CHECK(max_rel_error(run_paged(peaky, kv_dtype::f32, true, shuffle_seed), dense_attention(peaky, false),
                      shape.head_dim) <= 1e-5);
}

TEST_CASE("paged attention splits one sequence's keys over the threads and stays exact",
          "[cpu_ops][attention]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const test::kernel_threads_scope restore_threads;
  const auto shape = GENERATE(attn_shape{8, 2, 64, 16}, attn_shape{4, 4, 40, 16}, attn_shape{8, 1, 128, 32});
  CAPTURE(shape.n_head, shape.n_head_kv, shape.head_dim, shape.block_size);
  // One sequence, so few items: its keys are split into ranges that are merged after. A decode
  // row deep in the context, and a prefill chunk whose rows see different numbers of ranges.
  for (auto lengths :
       {std::vector<std::pair<uint32_t, uint32_t>>{{700, 1}}, {{600, 20}}, {{500, 80}}, {{70, 1}}}) {
    CAPTURE(lengths[0].first, lengths[0].second);
    const test_batch b = make_batch(rng, shape, lengths, 4.0f);
    const auto exact = dense_attention(b, false);
    const auto rounded = dense_attention(b, true);
    std::vector<float> first_bf16;
    for (int threads : {1, 2, 8}) {
      CAPTURE(threads);
      set_kernel_threads(threads);
      CHECK(max_rel_error(run_paged(b, kv_dtype::f32, true, 1), exact, shape.head_dim) <= 1e-5);
      const auto got = run_paged(b, kv_dtype::bf16, true, 1);
      CHECK(max_rel_error(got, rounded, shape.head_dim) <= 1e-3);
      // The key split follows the sequence alone; how kv heads are grouped into items follows the
      // thread count but never changes a bit.
      if (first_bf16.empty()) first_bf16 = got;
      CHECK(std::memcmp(got.data(), first_bf16.data(), got.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("paged attention with a sliding window, soft-capped scores and a scale matches dense attention",
          "[cpu_ops][attention]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto shape = GENERATE(attn_shape{4, 2, 48, 16}, attn_shape{8, 1, 64, 4}, attn_shape{4, 4, 40, 1});
  CAPTURE(shape.n_head, shape.n_head_kv, shape.head_dim, shape.block_size);
  // Windows inside a block, across blocks and across the 64-key prefill tiles; decode rows, prefill
  // chunks from 0 and after a cached prefix, and one long decode row whose keys are split.
  const std::vector<std::pair<uint32_t, uint32_t>> lengths{{0, 1},  {5, 1},   {33, 1}, {700, 1},
                                                           {0, 37}, {40, 17}, {21, 90}};
  for (uint32_t window : {1u, 5u, 16u, 70u, 2000u}) {
    for (float softcap : {0.0f, 2.0f}) {
      CAPTURE(window, softcap);
      const ops::attn_params params{0.3f, softcap, window};
      const test_batch b = make_batch(rng, shape, lengths, 2.0f);
      const auto got = run_paged(b, kv_dtype::f32, true, 7, params);
      CHECK(max_rel_error(got, dense_attention(b, false, params), shape.head_dim) <= 1e-5);
      const auto bf16 = run_paged(b, kv_dtype::bf16, true, 7, params);
      CHECK(max_rel_error(bf16, dense_attention(b, true, params), shape.head_dim) <= 1e-3);
    }
  }
}

TEST_CASE("bf16 tiles and blocks match dense attention over bf16 queries, on any thread count",
          "[cpu_ops][attention]") {
  if (!dpbf16_available()) {
    std::printf("paged attention: bf16 tiles not run here (the CPU lacks vdpbf16ps); compiled only\n");
    return;
  }
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const test::kernel_threads_scope restore_threads;
  // Heads of 32, 64, 96, 128 and 256 (gemma's; MHA and GQA up to 8 query heads per kv head),
  // blocks of 1 to 256 keys (of an odd size, whose last key a decode fold pairs with zero, and of
  // more than the 128 it folds at once); MHA decode rows fold up to 2 kv heads together (6: three
  // pairs, or 3 and 3 to an item, each a pair and one); and a head of 48, which bf16 does not take (f32
  // folds, at their bound).
  const auto shape = GENERATE(attn_shape{4, 4, 64, 16}, attn_shape{8, 2, 128, 16}, attn_shape{8, 1, 64, 32},
                              attn_shape{4, 2, 96, 4}, attn_shape{2, 2, 64, 1}, attn_shape{2, 1, 256, 128},
                              attn_shape{16, 2, 64, 5}, attn_shape{4, 1, 128, 256}, attn_shape{6, 6, 32, 160},
                              attn_shape{4, 2, 48, 16});
  CAPTURE(shape.n_head, shape.n_head_kv, shape.head_dim, shape.block_size);
  // Prefill chunks from 0 and after cached prefixes (mid-block, across the 64-row items and across
  // two key ranges) fold packed tiles; decode rows (one early, one mid-block, two whose keys are
  // split) and a chunk of 2 rows (at most 4 queries per kv head here, or tiles) fold the blocks
  // in place.
  const std::vector<std::pair<uint32_t, uint32_t>> lengths{{0, 37}, {40, 17}, {21, 90}, {600, 70}, {2100, 9},
                                                           {0, 1},  {33, 1},  {700, 1}, {1500, 1}, {50, 2}};
  const ops::attn_params plain{.in_bf16 = true}, capped{0.3f, 2.0f, 70, true}, narrow{0.0f, 0.0f, 7, true};
  for (const auto& params : {plain, capped, narrow}) {
    CAPTURE(params.softcap, params.window);
    const test_batch b = make_batch(rng, shape, lengths, 2.0f);
    // The reference rounds the queries where the kernel does: a row whose queries it folds in
    // f32 against bf16-rounded ones had its 2e-2 take the queries' rounding too (0.022 with
    // blocks of 256, where the prefill tiles fold in f32: one seed in ~13).
    const auto in_bf16 = rows_in_bf16(b, params);
    const bool bf16 = std::find(in_bf16.begin(), in_bf16.end(), true) != in_bf16.end();
    const auto want = dense_attention(b, true, params, in_bf16);
    const auto exact = dense_attention(b, false, params);
    std::vector<float> first;
    for (int threads : {1, 2, 8}) {
      CAPTURE(threads);
      set_kernel_threads(threads);
      const auto got = run_paged(b, kv_dtype::bf16, true, 3, params);
      // Left after the queries' rounding: the weights' (2^-9 each, relative), times the values'
      // magnitude over the output's. Worst seen over 6 seeds: 0.0034 (Zen 5); 0.025 against exact.
      CHECK(max_rel_error(got, want, shape.head_dim) <= (bf16 ? 2e-2 : 1e-3));
      CHECK(max_rel_error(got, exact, shape.head_dim) <= 6e-2);
      if (first.empty()) first = got;
      CHECK(std::memcmp(got.data(), first.data(), got.size() * sizeof(float)) == 0);
    }
  }
}
