#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
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
  CHECK_FALSE(traits_of(uint32_t{3}));  // q4_1: a ggml type Hearth does not read
  CHECK(tensor_type_from_name("q8_0") == tensor_type::q8_0);
  CHECK_FALSE(tensor_type_from_name("q5_k"));
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

TEST_CASE("every type round-trips within its precision", "[tensor_types]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  const auto x = random_floats(4096, seed, 0.5f);
  struct bound {
    tensor_type type;
    double rel_rms;  // tolerated RMS error relative to the RMS of x
  };
  for (auto [type, tol] : {bound{tensor_type::f32, 0.0}, bound{tensor_type::f16, 1e-3},
                           bound{tensor_type::bf16, 8e-3}, bound{tensor_type::q8_0, 1e-2},
                           bound{tensor_type::q4_0, 0.15}}) {
    const auto y = round_trip(type, x);
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
      err += (y[i] - x[i]) * (y[i] - x[i]);
      ref += x[i] * x[i];
    }
    INFO(traits_of(type).name);
    CHECK(std::sqrt(err / ref) <= tol);
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
