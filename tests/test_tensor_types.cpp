#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include "model/tensor_types.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

std::vector<float> random_floats(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::vector<float> round_trip(tensor_type t, const std::vector<float>& x) {
  std::vector<std::byte> bytes(*bytes_for(t, x.size()));
  quantize(t, x, bytes);
  std::vector<float> y(x.size());
  dequantize(t, bytes, y);
  return y;
}

}  // namespace

TEST_CASE("bytes_for follows the block layouts", "[tensor_types]") {
  CHECK(bytes_for(tensor_type::f32, 10) == 40u);
  CHECK(bytes_for(tensor_type::bf16, 10) == 20u);
  CHECK(bytes_for(tensor_type::q8_0, 64) == 68u);
  CHECK(bytes_for(tensor_type::q4_0, 64) == 36u);
  CHECK_FALSE(bytes_for(tensor_type::q8_0, 33));
  CHECK_FALSE(bytes_for(tensor_type::f32, uint64_t{1} << 63));
  CHECK(bytes_for(tensor_type::q4_k, 512) == 288u);
  CHECK_FALSE(bytes_for(tensor_type::q6_k, 288));  // 256-element super-blocks
  CHECK_FALSE(traits_of(uint32_t{16}));            // iq2_xxs: a ggml type Hearth does not read
  CHECK(tensor_type_from_name("q8_0") == tensor_type::q8_0);
  CHECK(tensor_type_from_name("q5_k") == tensor_type::q5_k);
  CHECK(tensor_type_from_name("Q5_K") == tensor_type::q5_k);
  CHECK_FALSE(tensor_type_from_name("q5_k_m"));  // a file type (model/quant_mix.hpp), not a tensor type
  CHECK(readable_types().find("q6_K") != std::string_view::npos);
}

TEST_CASE("half and bfloat16 conversions are exact where they can be", "[tensor_types]") {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f}) {
    CHECK(fp16_to_fp32(fp32_to_fp16(f)) == f);
  }
  CHECK(std::isinf(fp16_to_fp32(fp32_to_fp16(1e6f))));
  CHECK(std::isnan(fp16_to_fp32(fp32_to_fp16(std::numeric_limits<float>::quiet_NaN()))));
  CHECK(fp32_to_fp16(1.0f + 0x1p-11f) == fp32_to_fp16(1.0f));  // tie rounds to even
  for (float f : {0.0f, 1.0f, -3.0f, 0x1.8p100f}) CHECK(bf16_to_fp32(fp32_to_bf16(f)) == f);
  CHECK(std::isnan(bf16_to_fp32(fp32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // Every half bit pattern that is a number survives half -> float -> half.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (!std::isnan(f)) REQUIRE(fp32_to_fp16(f) == h);
  }
}

namespace {

// RMS error of quantize -> dequantize relative to the RMS of x.
double rel_rms_error(tensor_type type, const std::vector<float>& x) {
  const auto y = round_trip(type, x);
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    err += (y[i] - x[i]) * (y[i] - x[i]);
    ref += x[i] * x[i];
  }
  return std::sqrt(err / ref);
}

}  // namespace

TEST_CASE("every type round-trips within its precision", "[tensor_types]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  const auto x = random_floats(4096, seed, 0.5f);
  struct bound {
    tensor_type type;
    double rel_rms;  // tolerated RMS error relative to the RMS of x
  };
  // Gaussian data: ggml's reference quantizers measured 0.0002 (f16), 0.0017 (bf16), 0.0054
  // (q8_0), 0.0070 (q8_K), 0.018 (q6_K), 0.036 (q5_K), 0.038 (q5_1), 0.043 (q5_0), 0.071
  // (q4_K), 0.076 (iq4_nl), 0.078 (q4_1), 0.086 (q4_0), 0.152 (q3_K), 0.296 (q2_K) over five
  // seeds, each within 2 %; the bounds leave ~15 %.
  const bound bounds[] = {
      {tensor_type::f32, 0.0},     {tensor_type::f16, 3e-4},     {tensor_type::bf16, 2.5e-3},
      {tensor_type::q8_0, 6.5e-3}, {tensor_type::q8_k, 8.5e-3},  {tensor_type::q6_k, 0.021},
      {tensor_type::q5_k, 0.042},  {tensor_type::q5_1, 0.044},   {tensor_type::q5_0, 0.05},
      {tensor_type::q4_k, 0.082},  {tensor_type::iq4_nl, 0.088}, {tensor_type::q4_1, 0.09},
      {tensor_type::q4_0, 0.1},    {tensor_type::q3_k, 0.175},   {tensor_type::q2_k, 0.34},
  };
  REQUIRE(std::size(bounds) == tensor_types().size());
  for (auto [type, tol] : bounds) {
    INFO(traits_of(type).name);
    CHECK(rel_rms_error(type, x) <= tol);
  }
}

TEST_CASE("more bits, less error: the K types and the 32-element types are ordered", "[tensor_types]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  test::seed_sequence seeds(seed);
  // Gaussian, uniform and heavy-tailed (a few large elements, as real weights have) data.
  std::mt19937_64 rng(seeds.next());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> flat(4096), tails = random_floats(4096, seeds.next(), 0.3f);
  for (auto& v : flat) v = uniform(rng);
  for (size_t i = 0; i < tails.size(); i += 61) tails[i] *= 20.0f;
  for (const auto& x : {random_floats(4096, seeds.next(), 1.0f), flat, tails}) {
    const auto e = [&](tensor_type t) { return rel_rms_error(t, x); };
    CHECK(e(tensor_type::q8_0) < e(tensor_type::q6_k));
    CHECK(e(tensor_type::q6_k) < e(tensor_type::q5_k));
    CHECK(e(tensor_type::q5_k) < e(tensor_type::q4_k));
    CHECK(e(tensor_type::q4_k) < e(tensor_type::q3_k));
    CHECK(e(tensor_type::q3_k) < e(tensor_type::q2_k));
    CHECK(e(tensor_type::q5_0) < e(tensor_type::q4_0));
    CHECK(e(tensor_type::q5_1) < e(tensor_type::q4_1));
    CHECK(e(tensor_type::q6_k) < e(tensor_type::q5_0));
  }
}

TEST_CASE("zero and constant blocks quantize exactly or nearly", "[tensor_types]") {
  const std::vector<float> zeros(512, 0.0f), ones(512, 0.75f);
  for (const tensor_type t : tensor_types()) {
    INFO(traits_of(t).name);
    CHECK(round_trip(t, zeros) == zeros);
    // A constant: exact for the types with a min (q4_1, q5_1, q2_K, q4_K, q5_K store it), within
    // the scale's f16 rounding for the others.
    for (const float y : round_trip(t, ones)) CHECK(std::abs(y - 0.75f) <= 0.75f * 2e-3f);
  }
}

TEST_CASE("quantized blocks decode as ggml defines them", "[tensor_types]") {
  // One q4_0 block: d = 1 (f16 0x3c00), byte j = low nibble 9, high nibble 7 -> +1 and -1.
  std::vector<std::byte> block(18);
  block[0] = std::byte{0x00};
  block[1] = std::byte{0x3c};
  for (int j = 0; j < 16; ++j) block[2 + j] = std::byte{0x79};
  std::vector<float> out(32);
  dequantize(tensor_type::q4_0, block, out);
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 1.0f);
    CHECK(out[j + 16] == -1.0f);
  }
  // A zero block quantizes to d = 0 and decodes to zeros.
  std::vector<float> zeros(32, 0.0f);
  CHECK(round_trip(tensor_type::q8_0, zeros) == zeros);
  CHECK(round_trip(tensor_type::q4_0, zeros) == zeros);
}
