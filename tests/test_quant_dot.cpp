// The quantized dot kernels against the reference dequantization (model/tensor_types.hpp), for
// every type both know and every instruction set this CPU runs (the others are only compiled).
#include <cmath>
#include <cstdio>
#include <vector>

#include <catch2/catch.hpp>

#include "common/rng.hpp"
#include "kernels/quant_dot.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

std::vector<tensor_type> types_with_reference() {
  std::vector<tensor_type> out;
  for (uint32_t t = 0; t < 64; ++t) {
    if (quant::has_dot(static_cast<tensor_type>(t)) && traits_of(t))
      out.push_back(static_cast<tensor_type>(t));
  }
  return out;
}

std::vector<quant::isa> runnable_isas() {
  std::vector<quant::isa> out;
  for (auto i : {quant::isa::avx2, quant::isa::avx512_vnni, quant::isa::avx512_vnni_zmm}) {
    if (quant::isa_available(i))
      out.push_back(i);
    else
      std::printf("quant dot: %s not run here (the CPU lacks it); compiled only\n", quant::to_string(i));
  }
  return out;
}

// Random weights of a few scales, so blocks differ in their scales and offsets.
std::vector<float> random_weights(rng& r, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>((r.unit() * 2.0 - 1.0) * (1 + (i / 64) % 3));
  return v;
}

struct quantized {
  std::vector<std::byte> data;
  std::vector<float> reference;  // (rows, n_in) dequantized by model/tensor_types
  size_t row_bytes;
};

quantized make_matrix(rng& r, tensor_type type, uint32_t rows, uint32_t n_in) {
  const auto w = random_weights(r, size_t{rows} * n_in);
  quantized q{std::vector<std::byte>(*bytes_for(type, w.size())), std::vector<float>(w.size()),
              *bytes_for(type, n_in)};
  quantize(type, w, q.data);
  dequantize(type, q.data, q.reference);
  return q;
}

}  // namespace

TEST_CASE("quantized rows decode as the reference dequantizes them", "[quant]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  for (auto variant : runnable_isas())
    for (auto type : types_with_reference()) {
      const uint32_t rows = 3, n_in = 512;
      CAPTURE(quant::to_string(variant), traits_of(type).name);
      const auto q = make_matrix(r, type, rows, n_in);
      std::vector<float> out(q.reference.size());
      quant::dequantize_rows(variant, type, q.data.data(), q.row_bytes, rows, n_in, out.data());
      for (size_t i = 0; i < out.size(); ++i) {
        // One rounding apart at most: the reference multiplies and adds, the kernel fuses them.
        if (std::abs(out[i] - q.reference[i]) > 1e-6f * (1 + std::abs(q.reference[i]))) {
          FAIL_CHECK("element " << i << ": " << out[i] << " vs " << q.reference[i]);
          break;
        }
      }
    }
}

TEST_CASE("quantized dot products match the reference within the activations' rounding", "[quant]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  // 27 rows: a group of 16 (the zmm kernels, where the type takes them at that m), one of 8 and
  // 3 left over; m = 31 takes passes of every size from 3 up, m = 1 to 3 the batch-1 kernels'.
  const uint32_t rows = 27;
  for (auto variant : runnable_isas())
    for (auto type : types_with_reference())
      for (uint32_t m : {1u, 2u, 3u, 4u, 9u, 31u}) {
        // Three 256-element super-blocks; 25 blocks of 32, past every unrolled group of blocks.
        const uint32_t n_in = traits_of(type).block_size == 256 ? 768 : 800;
        CAPTURE(quant::to_string(variant), traits_of(type).name, m, n_in);
        const auto q = make_matrix(r, type, rows, n_in);
        std::vector<float> x(size_t{m} * n_in);
        for (auto& v : x) v = static_cast<float>(r.unit() * 2.0 - 1.0);
        // The K types' dots take one activation scale per 256 (their super-block), the rest one per 32.
        const uint32_t group = traits_of(type).block_size == 256 ? 256 : 32;
        std::vector<quant::act_block> act(size_t{m} * n_in / 32);
        std::vector<float> dsum(size_t{m} * n_in / 16);
        std::vector<int16_t> bsum(size_t{m} * n_in / 16);
        // Larger batches get no lanes, as in the matmul: a dot that read them would fault.
        std::vector<int8_t> lanes(m <= quant::lanes_max_rows ? m * quant::lanes_bytes(n_in) : 0);
        for (uint32_t i = 0; i < m; ++i)
          quant::quantize_activations(variant, x.data() + size_t{i} * n_in, n_in, group,
                                      act.data() + size_t{i} * n_in / 32, dsum.data() + size_t{i} * n_in / 16,
                                      bsum.data() + size_t{i} * n_in / 16,
                                      lanes.empty() ? nullptr : lanes.data() + i * quant::lanes_bytes(n_in));
        std::vector<float> y(size_t{m} * rows, NAN);
        quant::dot_rows(variant, type, q.data.data(), q.row_bytes, rows, n_in,
                        {act.data(), dsum.data(), bsum.data(), lanes.empty() ? nullptr : lanes.data()}, m,
                        y.data(), rows);
        for (uint32_t i = 0; i < m; ++i)
          for (uint32_t o = 0; o < rows; ++o) {
            // Against the activations as quantized: only f32 summation rounds. Against the exact
            // activations: each is off by at most half its block's step d.
            double exact = 0, as_quantized = 0, bound = 0;
            for (uint32_t k = 0; k < n_in; ++k) {
              const double w = q.reference[size_t{o} * n_in + k];
              const auto& a = act[(size_t{i} * n_in + k) / 32];
              exact += w * x[size_t{i} * n_in + k];
              as_quantized += w * a.d * a.q[k % 32];
              bound += std::abs(w) * a.d / 2;
            }
            const double got = y[size_t{i} * rows + o];
            CAPTURE(i, o, got, exact, as_quantized, bound);
            CHECK(std::abs(got - as_quantized) <= 1e-4 * (1 + bound));
            CHECK(std::abs(got - exact) <= bound * 1.001 + 1e-4);
          }
      }
}

namespace {

void check_hand_quantized(quant::isa variant) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = i < 32 ? (i - 16) / 16.0f : 0.0f;
  quant::act_block b[2];
  float dsum[4];
  int16_t bsum[4];
  quant::quantize_activations(variant, x.data(), 64, 32, b, dsum, bsum, nullptr);
  CHECK(b[0].d == Approx(1.0f / 127));  // max |x| = 1
  CHECK(b[0].q[0] == -127);             // -16 / 16
  CHECK(b[0].q[16] == 0);
  CHECK(b[0].q[31] == 119);  // 15 / 16 * 127 = 119.06
  int s0 = 0, s1 = 0;
  for (int i = 0; i < 16; ++i) s0 += b[0].q[i], s1 += b[0].q[16 + i];
  CHECK(dsum[0] == Approx(b[0].d * s0));
  CHECK(dsum[1] == Approx(b[0].d * s1));
  CHECK(bsum[0] == s0);
  CHECK(bsum[1] == s1);
  // In groups of 256, the 8 blocks share one scale: that of the group's largest |x|.
  std::vector<float> wide(256, 0.25f);
  wide[200] = -2.0f;
  std::vector<quant::act_block> g(8);
  std::vector<float> gsum(16);
  std::vector<int16_t> gbsum(16);
  quant::quantize_activations(variant, wide.data(), 256, 256, g.data(), gsum.data(), gbsum.data(), nullptr);
  for (const auto& blk : g) CHECK(blk.d == Approx(2.0f / 127));
  CHECK(g[0].q[0] == 16);  // 0.25 / (2 / 127) = 15.9
  CHECK(g[6].q[8] == -127);
  CHECK(b[1].d == 0.0f);  // an all-zero block
  CHECK(dsum[2] == 0.0f);
  CHECK(dsum[3] == 0.0f);
  CHECK(bsum[3] == 0);
  for (int i = 0; i < 32; ++i) CHECK(b[1].q[i] == 0);
}

}  // namespace

TEST_CASE("activations quantize per block of 32 with their sums", "[quant]") {
  for (auto variant : runnable_isas()) {
    CAPTURE(quant::to_string(variant));
    check_hand_quantized(variant);
  }
}

// The vector code against the definition, element by element: d = max |x| / 127 per group,
// q = nearbyint(x * 127 / max |x|), the sums of each 16 exact.
TEST_CASE("activations quantize exactly as the scalar definition", "[quant]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  for (auto variant : runnable_isas())
    for (uint32_t group : {32u, 256u}) {
      CAPTURE(quant::to_string(variant), group);
      const uint32_t n = 1024;
      std::vector<float> x(n);
      for (auto& v : x) v = static_cast<float>((r.unit() * 2.0 - 1.0) * (r.unit() < 0.1 ? 40.0 : 1.0));
      if (group == 32) x[0] = 127.0f, x[1] = 2.5f, x[2] = 3.5f, x[3] = -2.5f;  // scale 1: ties, to even
      std::vector<quant::act_block> a(n / 32);
      std::vector<float> dsum(n / 16);
      std::vector<int16_t> bsum(n / 16);
      quant::quantize_activations(variant, x.data(), n, group, a.data(), dsum.data(), bsum.data(), nullptr);
      for (uint32_t g = 0; g < n / group; ++g) {
        float amax = 0.0f;
        for (uint32_t i = 0; i < group; ++i) amax = std::max(amax, std::fabs(x[g * group + i]));
        const float id = amax > 0.0f ? 127.0f / amax : 0.0f;
        if (g == 0 && group == 32) CHECK((a[0].q[1] == 2 && a[0].q[2] == 4 && a[0].q[3] == -2));
        for (uint32_t i = 0; i < group; i += 16) {
          int sum = 0;
          for (uint32_t k = 0; k < 16; ++k) {
            const uint32_t e = g * group + i + k;
            const int q = static_cast<int>(std::nearbyint(x[e] * id));
            CHECK(a[e / 32].q[e % 32] == q);
            sum += q;
          }
          const uint32_t h = (g * group + i) / 16;
          CHECK(a[h / 2].d == amax / 127.0f);
          CHECK(bsum[h] == sum);
          CHECK(dsum[h] == amax / 127.0f * static_cast<float>(sum));
        }
      }
    }
}
