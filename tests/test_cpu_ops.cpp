// The CPU backend's elementwise kernels and KV pool against their plain twins (reference_ops).
#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kernel_threads_scope.hpp"
#include "kernels/cpu_ops.hpp"
#include "kernels/reference_ops.hpp"
#include "kernels/simd.hpp"
#include "model/tensor_types.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

//! |a - b| <= rel * |b| + abs for every element.
void require_close(std::span<const float> a, std::span<const float> b, double rel, double abs) {
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("element " << i << ": " << a[i] << " vs " << b[i]);
    REQUIRE(std::fabs(static_cast<double>(a[i]) - b[i]) <= rel * std::fabs(b[i]) + abs);
  }
}

}  // namespace

TEST_CASE("simd::exp is within a few ulp of exp over its range", "[cpu_ops]") {
  for (float x = -87.0f; x <= 88.0f; x += 0.0173f) {
    const double want = std::exp(static_cast<double>(x));
    INFO("x = " << x);
    REQUIRE(std::fabs(simd::exp(x) - want) <= 3e-7 * want);
  }
  REQUIRE(simd::exp(0.0f) == 1.0f);
  REQUIRE(simd::exp(-std::numeric_limits<float>::infinity()) < 1e-37f);
  REQUIRE(simd::exp(-1000.0f) < 1e-37f);
  REQUIRE(std::isfinite(simd::exp(1000.0f)));
}

TEST_CASE("rmsnorm matches the reference on strided and aliased rows", "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  for (uint32_t n : {1u, 7u, 16u, 100u, 2048u}) {
    CAPTURE(n);
    const uint32_t rows = 5, stride = n + 3;  // x is a slice of wider rows
    const auto x = random_floats(rng, size_t{rows} * stride, -3.0f, 3.0f);
    const auto weight = random_floats(rng, n, -2.0f, 2.0f);
    std::vector<float> out(size_t{rows} * n);
    ops::rmsnorm({x.data(), stride}, weight, 1e-5f, {out.data(), n}, rows);
    auto in_place = x;
    ops::rmsnorm({in_place.data(), stride}, weight, 1e-5f, {in_place.data(), stride}, rows);
    for (uint32_t r = 0; r < rows; ++r) {
      std::vector<float> want(n);
      ref::rmsnorm(std::span(x).subspan(size_t{r} * stride, n), weight, 1e-5f, want);
      require_close(std::span(out).subspan(size_t{r} * n, n), want, 1e-5, 1e-30);
      require_close(std::span(in_place).subspan(size_t{r} * stride, n), want, 1e-5, 1e-30);
    }
  }
}

TEST_CASE("gated_act matches silu(gate) * up and gelu(gate) * up", "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto act = GENERATE(ffn_activation::silu, ffn_activation::gelu);
  for (uint32_t n_ff : {1u, 13u, 64u, 1000u}) {
    CAPTURE(n_ff, act == ffn_activation::gelu);
    const uint32_t rows = 3;
    const auto gate_up = random_floats(rng, size_t{rows} * 2 * n_ff, -30.0f, 30.0f);
    std::vector<float> out(size_t{rows} * n_ff), want(out.size());
    ops::gated_act({gate_up.data(), 2 * size_t{n_ff}}, {out.data(), n_ff}, rows, n_ff, act);
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t i = 0; i < n_ff; ++i) {
        const float* row = gate_up.data() + size_t{r} * 2 * n_ff;
        const float g = act == ffn_activation::silu ? ref::silu(row[i]) : ref::gelu(row[i]);
        want[size_t{r} * n_ff + i] = g * row[n_ff + i];
      }
    }
    require_close(out, want, 1e-5, 1e-30);
  }
}

TEST_CASE("softcap matches cap * tanh(x / cap)", "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  for (float cap : {1.0f, 30.0f, 50.0f}) {
    CAPTURE(cap);
    auto x = random_floats(rng, 1003, -4 * cap, 4 * cap);
    auto want = x;
    ref::softcap(want, cap);
    ops::softcap(x, cap);
    // tanh as 1 - 2 / (e^2y + 1): an absolute error of ~1e-7 of the cap near 0.
    require_close(x, want, 1e-5, 1e-6 * cap);
  }
}

TEST_CASE("rope matches the reference for both pairings, with and without frequency factors", "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto pairing = GENERATE(rope_pairing::adjacent, rope_pairing::halves);
  const bool with_factors = GENERATE(false, true);
  const auto [head_dim, n_rot] = GENERATE(std::pair{16u, 16u}, std::pair{64u, 32u}, std::pair{128u, 128u});
  CAPTURE(static_cast<int>(pairing), with_factors, head_dim, n_rot);
  const float base = 500000.0f;
  const auto factors = with_factors ? random_floats(rng, n_rot / 2, 1.0f, 8.0f) : std::vector<float>{};
  // Positions up to 100000, one repeated (the table reuses the row), one 0.
  std::vector<uint32_t> positions{0, 1, 99999, 99999, 100000, 4097};
  for (int i = 0; i < 4; ++i) positions.push_back(std::uniform_int_distribution<uint32_t>(0, 100000)(rng));
  const auto rows = static_cast<uint32_t>(positions.size());
  const uint32_t n_heads = 3, stride = n_heads * head_dim + 5;  // q and k heads of a fused row, then more
  const auto x = random_floats(rng, size_t{rows} * stride, -2.0f, 2.0f);
  auto got = x;
  const auto table = ops::make_rope_table(positions, n_rot, base, pairing, factors);
  ops::rope({got.data(), stride}, rows, n_heads, head_dim, table);
  for (uint32_t r = 0; r < rows; ++r) {
    CAPTURE(positions[r]);
    for (uint32_t h = 0; h < n_heads; ++h) {
      const size_t off = size_t{r} * stride + size_t{h} * head_dim;
      std::vector<float> want(x.begin() + static_cast<ptrdiff_t>(off),
                              x.begin() + static_cast<ptrdiff_t>(off + head_dim));
      ref::rope(want, n_rot, positions[r], base, pairing, factors);
      // The error scales with the pair's magnitude (|x| <= 2), not with a result near zero.
      require_close(std::span(got).subspan(off, head_dim), want, 0.0, 2e-6);
      for (uint32_t d = n_rot; d < head_dim; ++d) REQUIRE(got[off + d] == x[off + d]);
    }
    for (uint32_t e = n_heads * head_dim; e < stride; ++e)
      REQUIRE(got[size_t{r} * stride + e] == x[size_t{r} * stride + e]);
  }
}

TEST_CASE("kv_pool: layout, offsets, alignment and errors", "[kv_pool]") {
  const kv_layout layout{
      .n_layer = 3, .n_head_kv = 2, .head_dim = 48, .block_size = 16, .dtype = kv_dtype::bf16};
  REQUIRE(layout.tile_bytes() == 16 * 48 * 2);
  REQUIRE(layout.block_bytes() == 16 * 48 * 2 * 2 * 2 * 3);
  auto pool = kv_pool::create(layout, 5);
  REQUIRE(pool.ok());
  REQUIRE(pool->n_blocks() == 5);
  REQUIRE(pool->size_bytes() == 5 * layout.block_bytes());
  const std::byte* base = pool->block(0).data();
  REQUIRE(reinterpret_cast<uintptr_t>(base) % 64 == 0);
  REQUIRE(std::all_of(base, base + pool->size_bytes(), [](std::byte b) { return b == std::byte{0}; }));
  // block (n_layer, 2 [k, v], n_head_kv, block_size, head_dim)
  for (uint32_t b = 0; b < 5; ++b) {
    REQUIRE(pool->block(b).data() == base + b * layout.block_bytes());
    REQUIRE(pool->block(b).size() == layout.block_bytes());
    for (uint32_t l = 0; l < 3; ++l) {
      for (uint32_t kv = 0; kv < 2; ++kv) {
        for (uint32_t h = 0; h < 2; ++h) {
          const size_t want = b * layout.block_bytes() + ((l * 2 + kv) * 2 + h) * layout.tile_bytes();
          REQUIRE(pool->tile(b, l, kv, h) == base + want);
          REQUIRE(std::as_const(*pool).tile(b, l, kv, h) == base + want);
        }
      }
    }
  }
  REQUIRE(
      kv_pool::create(
          kv_layout{.n_layer = 1, .n_head_kv = 1, .head_dim = 8, .block_size = 4, .dtype = kv_dtype::f32}, 0)
          .ok());

  auto empty = layout;
  empty.head_dim = 0;
  auto bad = kv_pool::create(empty, 4);
  REQUIRE(!bad.ok());
  REQUIRE(bad.error().code == errc::invalid_argument);
  const kv_layout huge{.n_layer = 0xffffffff,
                       .n_head_kv = 0xffffffff,
                       .head_dim = 0xffffffff,
                       .block_size = 0xffff,
                       .dtype = kv_dtype::f32};
  auto too_big = kv_pool::create(huge, 2);
  REQUIRE(!too_big.ok());
  REQUIRE(too_big.error().code == errc::limit_exceeded);
  const kv_layout big{
      .n_layer = 80, .n_head_kv = 64, .head_dim = 256, .block_size = 1024, .dtype = kv_dtype::f32};
  // ~10.7 GB a block: 2^32 blocks overflow 64 bits; 10^9 blocks fit 64 bits but not the address space.
  for (uint32_t n_blocks : {0xffffffffu, 1000000000u}) {
    auto past_address_space = kv_pool::create(big, n_blocks);
    REQUIRE(!past_address_space.ok());
    REQUIRE(past_address_space.error().code == errc::limit_exceeded);
  }
}

TEST_CASE("kv_pool: blocks for bytes and tokens", "[kv_pool]") {
  const kv_layout layout{
      .n_layer = 2, .n_head_kv = 1, .head_dim = 4, .block_size = 16, .dtype = kv_dtype::f32};
  const uint64_t block = layout.block_bytes();  // 16 * 4 * 4 * 2 * 2 = 1024
  REQUIRE(block == 1024);
  REQUIRE(kv_pool::blocks_for_bytes(layout, 0) == 0);
  REQUIRE(kv_pool::blocks_for_bytes(layout, block - 1) == 0);
  REQUIRE(kv_pool::blocks_for_bytes(layout, block) == 1);
  REQUIRE(kv_pool::blocks_for_bytes(layout, 10 * block + 5) == 10);
  REQUIRE(kv_pool::blocks_for_bytes(layout, ~uint64_t{0}) == 0xffffffffu);  // saturates
  REQUIRE(kv_pool::blocks_for_tokens(layout, 0) == 0);
  REQUIRE(kv_pool::blocks_for_tokens(layout, 1) == 1);
  REQUIRE(kv_pool::blocks_for_tokens(layout, 16) == 1);
  REQUIRE(kv_pool::blocks_for_tokens(layout, 17) == 2);
  REQUIRE(kv_pool::blocks_for_tokens(layout, ~uint64_t{0}) == 0xffffffffu);
  kv_layout empty = layout;
  empty.block_size = 0;
  REQUIRE(kv_pool::blocks_for_bytes(empty, 1 << 20) == 0);
  REQUIRE(kv_pool::blocks_for_tokens(empty, 100) == 0);
}

TEST_CASE("kv_pool: whole blocks copied out and in through host memory, bad copies refused", "[kv_pool]") {
  const kv_layout layout{
      .n_layer = 2, .n_head_kv = 1, .head_dim = 4, .block_size = 2, .dtype = kv_dtype::bf16};
  auto from = kv_pool::create(layout, 5).value();
  auto to = kv_pool::create(layout, 5).value();
  const size_t n = layout.block_bytes();
  for (uint32_t b = 0; b < 5; ++b) std::ranges::fill(from.block(b), std::byte(b + 1));
  const std::vector<uint32_t> ids{3, 0};
  std::vector<std::byte> staged(2 * n);
  REQUIRE(from.read_blocks(ids, staged).ok());
  CHECK((staged[0] == std::byte(4) && staged[n - 1] == std::byte(4) && staged[n] == std::byte(1)));
  REQUIRE(to.write_blocks(ids, staged).ok());
  for (uint32_t b = 0; b < 5; ++b) {
    const std::byte want = b == 3 || b == 0 ? std::byte(b + 1) : std::byte(0);
    CHECK(std::ranges::count(to.block(b), want) == static_cast<ptrdiff_t>(n));
  }
  const std::vector<uint32_t> outside{1, 5};
  auto st = to.write_blocks(outside, staged);
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message == "kv store: block 5 outside the pool of 5");
  CHECK(to.block(1)[0] == std::byte(0));  // refused before any copy
  st = from.read_blocks(ids, std::span(staged).first(n));
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().code == errc::invalid_argument);
  CHECK(st.error().message.find("bytes for 2 blocks") != std::string::npos);
}

TEST_CASE("store_kv writes each row into its block and slot, converted to the pool's dtype", "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const auto dtype = GENERATE(kv_dtype::f32, kv_dtype::bf16);
  const kv_layout layout{.n_layer = 2, .n_head_kv = 2, .head_dim = 8, .block_size = 4, .dtype = dtype};
  auto pool = kv_pool::create(layout, 6).value();
  const uint32_t kv_dim = 16, stride = 3 * kv_dim;  // rows of a fused QKV output: [q | k | v]
  const auto qkv = random_floats(rng, 7 * size_t{stride}, -4.0f, 4.0f);
  const std::vector<uint32_t> blocks_a{4, 1}, blocks_b{2, 5, 0};
  // Sequence a: rows 0..2 at positions 2..4 (crosses a block); b: rows 3..6 at positions 7..10.
  const std::vector<ops::seq_rows> seqs{{0, 3, 2, blocks_a}, {3, 4, 7, blocks_b}};
  ops::store_kv(pool, 1, {qkv.data() + kv_dim, stride}, {qkv.data() + 2 * kv_dim, stride}, seqs);

  std::vector<std::vector<bool>> written(6, std::vector<bool>(4));  // (block, slot)
  for (const auto& s : seqs) {
    for (uint32_t i = 0; i < s.n_rows; ++i) {
      const uint32_t pos = s.start_pos + i, block = s.blocks[pos / 4], slot = pos % 4;
      written[block][slot] = true;
      for (uint32_t kv = 0; kv < 2; ++kv) {
        for (uint32_t h = 0; h < 2; ++h) {
          const float* src = qkv.data() + size_t{s.first_row + i} * stride + (kv + 1) * kv_dim + h * 8;
          const std::byte* dst = pool.tile(block, 1, kv, h) + slot * 8 * layout.elem_bytes();
          for (uint32_t d = 0; d < 8; ++d) {
            if (dtype == kv_dtype::f32) {
              float f;
              std::memcpy(&f, dst + 4 * d, 4);
              REQUIRE(f == src[d]);
            } else {
              uint16_t b;
              std::memcpy(&b, dst + 2 * d, 2);
              REQUIRE(b == fp32_to_bf16(src[d]));
            }
          }
        }
      }
    }
  }
  // Nothing else changed: layer 0 and the untouched slots of layer 1 are still zero.
  for (uint32_t b = 0; b < 6; ++b) {
    for (uint32_t slot = 0; slot < 4; ++slot) {
      for (uint32_t l = 0; l < 2; ++l) {
        if (l == 1 && written[b][slot]) continue;
        for (uint32_t kv = 0; kv < 2; ++kv) {
          for (uint32_t h = 0; h < 2; ++h) {
            const std::byte* p = pool.tile(b, l, kv, h) + slot * 8 * layout.elem_bytes();
            REQUIRE(
                std::all_of(p, p + 8 * layout.elem_bytes(), [](std::byte x) { return x == std::byte{0}; }));
          }
        }
      }
    }
  }
}

TEST_CASE("store_kv and add spread a prefill chunk's rows over the threads, each row as one thread writes it",
          "[cpu_ops]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const test::kernel_threads_scope two_threads(2);
  // 300 rows of 256 floats: three ranges of rows (cpu_ops.cpp's for_row_ranges), from mid-block.
  const kv_layout layout{
      .n_layer = 1, .n_head_kv = 2, .head_dim = 64, .block_size = 16, .dtype = kv_dtype::bf16};
  auto pool = kv_pool::create(layout, 20).value();
  const uint32_t rows = 300, kv_dim = 128, stride = 2 * kv_dim, start = 5;
  auto kv = random_floats(rng, size_t{rows} * stride, -4.0f, 4.0f);
  // Where rounding is decided: a tie (to even), the largest finite, NaN, infinity, -0.
  const float specials[] = {std::bit_cast<float>(0x3f808000u),       std::bit_cast<float>(0x3f818000u),
                            std::numeric_limits<float>::max(),       std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::infinity(), -0.0f};
  for (size_t i = 0; i < std::size(specials); ++i) kv[i * 997 % kv.size()] = specials[i];
  std::vector<uint32_t> blocks(20);
  std::iota(blocks.begin(), blocks.end(), 0u);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  const ops::seq_rows seq{0, rows, start, blocks};
  ops::store_kv(pool, 0, {kv.data(), stride}, {kv.data() + kv_dim, stride}, {&seq, 1});
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t pos = start + r;
    for (uint32_t half = 0; half < 2; ++half) {
      for (uint32_t h = 0; h < 2; ++h) {
        const float* src = kv.data() + size_t{r} * stride + half * kv_dim + h * 64;
        const std::byte* dst = pool.tile(blocks[pos / 16], 0, half, h) + (pos % 16) * 64 * 2;
        for (uint32_t d = 0; d < 64; ++d) {
          uint16_t b;
          std::memcpy(&b, dst + 2 * d, 2);
          INFO("row " << r << " head " << h << " element " << d);
          REQUIRE(b == fp32_to_bf16(src[d]));
        }
      }
    }
  }

  const uint32_t n = 256, ldx = n + 3;  // x a slice of wider rows
  auto x = random_floats(rng, size_t{rows} * ldx, -4.0f, 4.0f);
  const auto y = random_floats(rng, size_t{rows} * n, -4.0f, 4.0f);
  auto want = x;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < n; ++i) want[size_t{r} * ldx + i] += y[size_t{r} * n + i];
  ops::add({x.data(), ldx}, {y.data(), n}, rows, n);
  CHECK(x == want);
}
