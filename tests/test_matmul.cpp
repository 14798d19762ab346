// linear (oneDNN, and the bf16-weight kernel of emulated bf16) against a plain double-accumulation
// reference on fresh random inputs, and parallel_for's and parallel_runs' contracts.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "common/rng.hpp"
#include "kernel_threads_scope.hpp"
#include "kernels/bf16_gemm.hpp"
#include "kernels/dpbf16_matmul.hpp"
#include "kernels/matmul.hpp"
#include "kernels/matmul_bench.hpp"
#include "kernels/parallel.hpp"
#include "test_seed.hpp"

using namespace hearth;

namespace {

// One part as a model file holds it, and the f32 weights it stands for after dequantizing.
struct test_part {
  tensor_type type;
  uint32_t n_out;
  std::vector<std::byte> data;
  std::vector<float> weights;  // (n_out, n_in) dequantized
  std::vector<float> bias;     // (n_out,) or empty
};

std::vector<float> random_values(rng& r, size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.unit() * 2.0 - 1.0);
  return v;
}

test_part make_part(rng& r, tensor_type type, uint32_t n_out, uint32_t n_in, bool with_bias) {
  test_part p{type, n_out, {}, {}, {}};
  const auto w = random_values(r, size_t{n_out} * n_in);
  p.data.resize(*bytes_for(type, w.size()));
  quantize(type, w, p.data);
  p.weights.resize(w.size());
  dequantize(type, p.data, p.weights);
  if (with_bias) p.bias = random_values(r, n_out);
  return p;
}

std::vector<weight_part> views(const std::vector<test_part>& parts) {
  std::vector<weight_part> out;
  for (const auto& p : parts) out.push_back({p.type, p.data, p.n_out, p.bias});
  return out;
}

// y (m, sum n_out) = x (m, n_in) @ W^T + b over the stacked parts, in double.
std::vector<double> reference(const std::vector<test_part>& parts, const std::vector<float>& x, uint32_t m,
                              uint32_t n_in) {
  std::vector<double> y;
  for (uint32_t i = 0; i < m; ++i)
    for (const auto& p : parts)
      for (uint32_t o = 0; o < p.n_out; ++o) {
        double acc = p.bias.empty() ? 0.0 : p.bias[o];
        for (uint32_t k = 0; k < n_in; ++k)
          acc += double{p.weights[size_t{o} * n_in + k]} * x[size_t{i} * n_in + k];
        y.push_back(acc);
      }
  return y;  // (m, n_out) row-major: rows outer, stacked parts inner
}

// max |y - ref| / max |ref|
double rel_error(const std::vector<float>& y, const std::vector<double>& ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(y[i] - ref[i]));
    scale = std::max(scale, std::abs(ref[i]));
  }
  return diff / scale;
}

double tolerance(const matmul_plan& plan) {
  // bf16 rounds weights and activations to 8 bits of mantissa; quantized dots round activations
  // to 8-bit integers per block of 32.
  return plan.storage() == weight_storage::onednn_f32  ? 1e-4
         : plan.storage() == weight_storage::quantized ? 3e-2
                                                       : 2e-2;
}

size_t expected_bytes(const std::vector<test_part>& parts, uint32_t n_in, const matmul_plan& plan) {
  size_t n = 0;
  for (const auto& p : parts) {
    const size_t elems = size_t{p.n_out} * n_in;
    n += plan.storage() == weight_storage::quantized    ? *bytes_for(p.type, elems)
         : plan.storage() == weight_storage::onednn_f32 ? 4 * elems
                                                        : 2 * elems;
  }
  return n;
}

// Every plan a linear can run here: each path alone (hearth-w16 too, which runs on any x86-64 CPU
// though it is only chosen on AVX-512 ones; oneDNN bf16 and hearth-dpbf16 where the CPU has them),
// and those that change path with m.
std::vector<matmul_plan> test_plans() {
  std::vector<matmul_plan> plans;
  for (matmul_path p : all_matmul_paths) {
    if (storage_of(p) == weight_storage::quantized) continue;  // for quantized parts only: below
    const bool anywhere = p != matmul_path::onednn_bf16 && p != matmul_path::hearth_dpbf16;
    if (anywhere || path_available(p)) plans.push_back(matmul_plan::uniform(p));
  }
  plans.push_back(
      {{matmul_path::hearth_w16, matmul_path::hearth_w8, matmul_path::hearth_w16, matmul_path::widened_f32}});
  if (path_available(matmul_path::hearth_dpbf16))
    plans.push_back({{matmul_path::hearth_dpbf16, matmul_path::onednn_bf16, matmul_path::hearth_dpbf16,
                      matmul_path::onednn_bf16}});
  return plans;
}

void check_against_reference(rng& r, const std::vector<test_part>& parts, uint32_t n_in,
                             const matmul_plan& plan, std::initializer_list<uint32_t> ms) {
  CAPTURE(describe(plan));
  const auto ws = views(parts);
  auto lin = linear::create(ws, n_in, plan);
  REQUIRE(lin.ok());
  uint32_t n_out = 0;
  for (const auto& p : parts) n_out += p.n_out;
  CHECK(lin->n_in() == n_in);
  CHECK(lin->n_out() == n_out);
  CHECK(lin->plan() == plan);
  CHECK(lin->weight_bytes() >= expected_bytes(parts, n_in, plan));
  for (uint32_t m : ms) {
    CAPTURE(m);
    const auto x = random_values(r, size_t{m} * n_in);
    std::vector<float> y(size_t{m} * n_out, NAN);
    lin->forward(x.data(), y.data(), m);
    CHECK(rel_error(y, reference(parts, x, m, n_in)) <= tolerance(plan));
  }
}

}  // namespace

TEST_CASE("linear matches the reference for every source type and batch size", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  for (const auto& plan : test_plans())
    for (auto type :
         {tensor_type::f32, tensor_type::f16, tensor_type::bf16, tensor_type::q8_0, tensor_type::q4_0}) {
      // Block types need whole 32-element blocks per row; the others take any width.
      const uint32_t n_in = traits_of(type).block_size == 1 ? 72 : 96;
      const uint32_t n_out = traits_of(type).block_size == 1 ? 40 : 37;
      CAPTURE(traits_of(type).name, n_in, n_out);
      check_against_reference(r, {make_part(r, type, n_out, n_in, true)}, n_in, plan,
                              {1, 2, 3, 7, 16, 33, 64, 200});
    }
}

TEST_CASE("linear stacks parts with and without biases", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const uint32_t n_in = 64;
  for (const auto& plan : test_plans()) {
    // Q/K/V-like: a biased part, an unbiased quantized one, a biased f16 one of odd size.
    check_against_reference(
        r,
        {make_part(r, tensor_type::f32, 24, n_in, true), make_part(r, tensor_type::q8_0, 16, n_in, false),
         make_part(r, tensor_type::f16, 9, n_in, true)},
        n_in, plan, {1, 3, 33});
    check_against_reference(
        r,
        {make_part(r, tensor_type::q4_0, 16, n_in, false), make_part(r, tensor_type::bf16, 5, n_in, false)},
        n_in, plan, {1, 7, 64});
  }
}

TEST_CASE("linear runs a batch larger than one primitive in chunks", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  for (const auto& plan : test_plans())
    check_against_reference(r, {make_part(r, tensor_type::f32, 24, 40, true)}, 40, plan, {256, 257, 600});
}

TEST_CASE("linear gives the same results on one and two threads", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const test::kernel_threads_scope restore_threads;
  const uint32_t n_in = 512, n_out = 333;  // hearth-dpbf16: 6 column blocks, the last of 13 columns
  for (const auto& plan : test_plans()) {
    CAPTURE(describe(plan));
    const std::vector<test_part> parts{make_part(r, tensor_type::f32, n_out, n_in, true)};
    const auto ws = views(parts);
    auto lin = linear::create(ws, n_in, plan);
    REQUIRE(lin.ok());
    for (uint32_t m : {1u, 16u, 40u, 64u}) {
      CAPTURE(m);
      const auto x = random_values(r, size_t{m} * n_in);
      std::vector<float> y1(size_t{m} * n_out), y2(y1.size());
      set_kernel_threads(1);
      lin->forward(x.data(), y1.data(), m);
      set_kernel_threads(2);
      CHECK(kernel_threads() == 2);
      lin->forward(x.data(), y2.data(), m);
      const auto ref = reference(parts, x, m, n_in);
      CHECK(rel_error(y1, ref) <= tolerance(plan));
      CHECK(rel_error(y2, ref) <= tolerance(plan));
      // Not bitwise: oneDNN's gemm:jit (AVX2) gives identical bits at m = 16 and 64 (split over
      // output columns) but not at m = 1, where its gemv splits the reduction over threads.
    }
  }
}

TEST_CASE("hearth-dpbf16 sums K by regions across blocks, uneven ones too", "[matmul]") {
  if (!path_available(matmul_path::hearth_dpbf16)) {
    std::printf("hearth-dpbf16 not run here (the CPU lacks vdpbf16ps); compiled only\n");
    return;
  }
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const test::kernel_threads_scope restore_threads;
  // 21 k blocks of 16: regions of 2 (ten, then 1) up to 4 rows, of 4 (five, then 1) up to 6, of 8
  // (8, 8, 5) up to 18 and of 16 (16, 5) beyond; 4 column blocks, the last of 8 columns, so each
  // thread reads ahead into its next block and stops at the end of its own.
  const uint32_t n_in = 336, n_out = 200;
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    set_kernel_threads(threads);
    check_against_reference(r, {make_part(r, tensor_type::f32, n_out, n_in, true)}, n_in,
                            matmul_plan::uniform(matmul_path::hearth_dpbf16),
                            {1, 2, 4, 5, 6, 7, 12, 16, 18, 19, 33, 48});
  }
}

TEST_CASE("bf16 linear takes prefill batches, over 256 rows in chunks", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  // 300 rows: a chunk of 256 and one of 44.
  check_against_reference(r, {make_part(r, tensor_type::bf16, 300, 1000, true)}, 1000,
                          default_plan(compute_type::bf16), {33, 40, 300});
}

TEST_CASE("bf16 weights take half the bytes of f32 ones", "[matmul]") {
  rng r(7);
  const std::vector<test_part> parts{make_part(r, tensor_type::f32, 64, 128, false)};
  const auto ws = views(parts);
  auto f32 = linear::create(ws, 128, compute_type::f32);
  auto bf16 = linear::create(ws, 128, compute_type::bf16);
  REQUIRE(f32.ok());
  REQUIRE(bf16.ok());
  CHECK(f32->weight_bytes() == size_t{64} * 128 * 4);
  CHECK(bf16->weight_bytes() == size_t{64} * 128 * 2);
}

TEST_CASE("gemm_bf16w matches a double reference for any shape and thread count", "[matmul]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const test::kernel_threads_scope restore_threads;
  // Batch sizes around each kernel's passes: w8 takes 6 rows at a time, w16 12, 8, 4, 2, 1.
  auto kernel_batches = [] {
    std::vector<std::pair<bf16_kernel, uint32_t>> out;
    for (uint32_t m : {1u, 2u, 3u, 5u, 6u, 7u, 13u, 16u, 32u}) out.emplace_back(bf16_kernel::w8, m);
    for (uint32_t m : {1u, 2u, 3u, 4u, 7u, 8u, 11u, 12u, 13u, 25u, 31u})
      out.emplace_back(bf16_kernel::w16, m);
    return out;
  };
  // Shapes: one panel, an odd number of panels (w16 pairs them), a partial last panel.
  for (auto [n_out, n_in] :
       {std::pair{1u, 1u}, {5u, 3u}, {16u, 16u}, {17u, 33u}, {40u, 72u}, {100u, 257u}, {48u, 5u}}) {
    // W and x as the kernel sees them: rounded to bf16.
    const std::vector<test_part> parts{make_part(r, tensor_type::bf16, n_out, n_in, n_out % 2 == 1)};
    bf16_matrix w(n_out, n_in);
    w.set_rows(0, n_out, parts[0].weights.data());
    for (auto [kernel, m] : kernel_batches()) {
      CAPTURE(n_out, n_in, kernel == bf16_kernel::w8 ? "w8" : "w16", m);
      const auto x = random_values(r, size_t{m} * n_in);
      std::vector<float> x_bf16(x.size()), y1(size_t{m} * n_out, NAN), y2(y1.size(), NAN);
      round_to_bf16(x.data(), x_bf16.data(), x.size());
      set_kernel_threads(1);
      gemm_bf16w(w, x.data(), y1.data(), m, parts[0].bias, kernel);
      set_kernel_threads(2);
      gemm_bf16w(w, x.data(), y2.data(), m, parts[0].bias, kernel);
      // Products of bf16 values are exact in f32: only the f32 summation rounds.
      CHECK(rel_error(y1, reference(parts, x_bf16, m, n_in)) <= 1e-5);
      CHECK(y1 == y2);  // each output is one thread's sum, in the same order
    }
  }
}

TEST_CASE("quantized parts kept as stored match the reference at every batch size", "[matmul]") {
  if (!path_available(matmul_path::quant_dot)) {
    WARN("not run: no AVX2, so quantized weights are expanded at load here");
    return;
  }
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const uint32_t n_in = 256;
  std::vector<matmul_plan> plans{matmul_plan{quantized_paths}, matmul_plan::uniform(matmul_path::quant_dot),
                                 matmul_plan::uniform(matmul_path::quant_f32),
                                 matmul_plan::uniform(matmul_path::quant_bf16)};
  for (auto p : {matmul_path::quant_onednn_bf16, matmul_path::quant_dpbf16, matmul_path::quant_dot_zmm}) {
    if (path_available(p))
      plans.push_back(matmul_plan::uniform(p));
    else
      std::printf("%s not run here: this CPU lacks its instructions\n", to_string(p));
  }
  for (const matmul_plan& plan : plans) {
    CAPTURE(describe(plan));
    // Q/K/V of a Q4_K_M file: parts of different types in one linear, one with a bias.
    check_against_reference(
        r,
        {make_part(r, tensor_type::q4_0, 40, n_in, true), make_part(r, tensor_type::q8_0, 24, n_in, false)},
        n_in, plan, {1, 2, 5, 16, 64, 300});
    // The dequantizing paths work through 256 k of 16 rows at a time, and quant-dpbf16 through a
    // block of 64 rows per thread: rows of 3 tiles and a part of one (800 = 3 x 256 + 32), of 2
    // whole ones (K types), parts that end inside a block and inside a group of 16.
    check_against_reference(
        r, {make_part(r, tensor_type::q4_0, 70, 800, true), make_part(r, tensor_type::q8_0, 9, 800, false)},
        800, plan, {1, 3, 16, 70});
    check_against_reference(
        r, {make_part(r, tensor_type::q4_k, 64, 512, false), make_part(r, tensor_type::q6_k, 20, 512, true)},
        512, plan, {2, 33, 130});
  }
}

TEST_CASE("quantized weights are read in place when owned, copied when not", "[matmul]") {
  if (!path_available(matmul_path::quant_dot)) {
    WARN("not run: no AVX2, so quantized weights are expanded at load here");
    return;
  }
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  rng r(seed);
  const uint32_t n_in = 64, m = 3;
  std::vector<test_part> parts{make_part(r, tensor_type::q8_0, 16, n_in, false)};
  const auto x = random_values(r, size_t{m} * n_in);
  auto owned_bytes = std::make_shared<std::vector<std::byte>>(parts[0].data);
  const weight_part owned{tensor_type::q8_0, *owned_bytes, 16, {}, owned_bytes};
  auto in_place = linear::create(std::span(&owned, 1), n_in, matmul_plan{quantized_paths});
  std::vector<std::byte> scratch_bytes = parts[0].data;
  const weight_part borrowed{tensor_type::q8_0, scratch_bytes, 16, {}};
  auto copied = linear::create(std::span(&borrowed, 1), n_in, matmul_plan{quantized_paths});
  REQUIRE(in_place.ok());
  REQUIRE(copied.ok());
  std::fill(scratch_bytes.begin(), scratch_bytes.end(), std::byte{0x7f});  // the caller's bytes change
  owned_bytes.reset();                                                     // the linear holds the owner
  std::vector<float> y1(size_t{m} * 16), y2(y1.size());
  in_place->forward(x.data(), y1.data(), m);
  copied->forward(x.data(), y2.data(), m);
  const auto ref = reference(parts, x, m, n_in);
  CHECK(rel_error(y1, ref) <= 3e-2);
  CHECK(rel_error(y2, ref) <= 3e-2);
  CHECK(in_place->weight_bytes() == *bytes_for(tensor_type::q8_0, 16 * n_in));
  // f32 weights have no dot kernels: refused by name.
  const std::vector<float> w(16 * n_in, 0.5f);
  const weight_part plain{tensor_type::f32, std::as_bytes(std::span(w)), 16, {}};
  auto refused = linear::create(std::span(&plain, 1), n_in, matmul_plan{quantized_paths});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == errc::unsupported);
  CHECK(refused.error().message.find("f32 part cannot be kept quantized") != std::string::npos);
}

TEST_CASE("linear refuses a plan whose paths need different storages", "[matmul]") {
  const std::vector<float> w(8 * 64, 0.5f);
  const weight_part part{tensor_type::f32, std::as_bytes(std::span(w)), 8, {}};
  const matmul_plan mixed{
      {matmul_path::hearth_w8, matmul_path::onednn_f32, matmul_path::hearth_w8, matmul_path::hearth_w8}};
  auto lin = linear::create(std::span(&part, 1), 64, mixed);
  REQUIRE_FALSE(lin.ok());
  CHECK(lin.error().code == errc::unsupported);
  CHECK(lin.error().message.find("hearth-w8/onednn-f32/hearth-w8/hearth-w8") != std::string::npos);
}

TEST_CASE("the plan without measuring: oneDNN where it has the compute type natively, else our kernel",
          "[matmul]") {
  CHECK(default_plan(compute_type::f32) == matmul_plan::uniform(matmul_path::onednn_f32));
  // oneDNN takes bf16 matmuls without bf16 hardware too (gemm:jit, slow): not the default there.
  // With it, decode sizes take our vdpbf16ps kernel over oneDNN's weights.
  CHECK(native_bf16() == (path_available(matmul_path::onednn_bf16) && dpbf16_available()));
  const auto dp = matmul_path::hearth_dpbf16, onednn = matmul_path::onednn_bf16;
  const matmul_plan expected = !native_bf16()        ? matmul_plan::uniform(matmul_path::hearth_w8)
                               : !path_available(dp) ? matmul_plan::uniform(onednn)
                                                     : matmul_plan{{dp, dp, onednn, onednn}};
  CHECK(default_plan(compute_type::bf16) == expected);
  CHECK(default_plan(compute_type::bf16).consistent());
  CHECK(paths_for(compute_type::f32) == std::vector{matmul_path::onednn_f32});
  const auto bf16 = paths_for(compute_type::bf16);
  CHECK(std::count(bf16.begin(), bf16.end(), matmul_path::hearth_w8) == 1);
  CHECK(std::count(bf16.begin(), bf16.end(), matmul_path::widened_f32) == 1);
  CHECK(std::count(bf16.begin(), bf16.end(), matmul_path::onednn_f32) == 0);
  // x86-64-v4, the level the w16 kernel's clone is built for.
  const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
  CHECK(std::count(bf16.begin(), bf16.end(), matmul_path::hearth_w16) == (v4 ? 1 : 0));
  for (matmul_path p : all_matmul_paths) CHECK(matmul_path_from_name(to_string(p)) == p);
  CHECK_FALSE(matmul_path_from_name("hearth").has_value());
}

TEST_CASE("linear rejects malformed parts", "[matmul]") {
  const std::vector<float> w(8 * 64, 0.5f);
  const std::vector<float> bias(8, 1.0f);
  const auto bytes = std::as_bytes(std::span(w));
  auto code = [](std::vector<weight_part> parts, uint32_t n_in) {
    auto lin = linear::create(parts, n_in, compute_type::f32);
    return lin.ok() ? std::optional<errc>{} : lin.error().code;
  };
  CHECK(code({}, 64) == errc::invalid_argument);
  CHECK(code({{tensor_type::f32, bytes, 8, {}}}, 0) == errc::invalid_argument);
  CHECK(code({{tensor_type::f32, bytes.first(100), 8, {}}}, 64) == errc::invalid_argument);
  CHECK(code({{tensor_type::f32, bytes, 0, {}}}, 64) == errc::invalid_argument);
  CHECK(code({{tensor_type::f32, bytes, 8, std::span(bias).first(7)}}, 64) == errc::invalid_argument);
  // q4_0 rows must be whole 32-element blocks: 16 rows of 48 fill 24 blocks, but not row by row.
  CHECK(code({{tensor_type::q4_0, bytes.first(24 * 18), 16, {}}}, 48) == errc::invalid_argument);
  CHECK(code({{static_cast<tensor_type>(77), bytes, 8, {}}}, 64) == errc::unsupported);
  CHECK_FALSE(code({{tensor_type::f32, bytes, 8, bias}}, 64).has_value());
}

TEST_CASE("measure_gemm_peak_gflops reports a positive rate", "[matmul]") {
  for (matmul_path p : paths_for(compute_type::bf16)) {
    CAPTURE(to_string(p));
    CHECK(measure_gemm_peak_gflops(4, 64, 48, matmul_plan::uniform(p), 0.01) > 0.0);
  }
  CHECK(measure_gemm_peak_gflops(4, 64, 48, default_plan(compute_type::f32), 0.01) > 0.0);
  CHECK(measure_gemm_peak_gflops(0, 64, 48, default_plan(compute_type::f32), 0.01) == 0.0);
}

TEST_CASE("parallel_for runs every index exactly once", "[parallel]") {
  const test::kernel_threads_scope restore_threads;
  for (int threads : {1, 2}) {
    set_kernel_threads(threads);
    CHECK(kernel_threads() == threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}})
      for (schedule s : {schedule::uneven, schedule::streaming}) {
        CAPTURE(threads, n, s == schedule::streaming);
        std::vector<std::atomic<int>> runs(n);
        parallel_for(
            n, [&](size_t i) { runs[i].fetch_add(1, std::memory_order_relaxed); }, s);
        CHECK(std::all_of(runs.begin(), runs.end(), [](const auto& c) { return c.load() == 1; }));
      }
  }
  // A parallel_for inside another runs serially on the calling thread, still once per index.
  std::vector<std::atomic<int>> runs(7 * 9);
  parallel_for(7, [&](size_t i) { parallel_for(9, [&](size_t j) { runs[i * 9 + j].fetch_add(1); }); });
  CHECK(std::all_of(runs.begin(), runs.end(), [](const auto& c) { return c.load() == 1; }));
}

TEST_CASE("parallel_runs runs every index once, each thread its own run, then the others' ends",
          "[parallel]") {
  const test::kernel_threads_scope restore_threads;
  for (int threads : {1, 2, 3}) {
    set_kernel_threads(threads);
    for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}}) {
      CAPTURE(threads, n);
      std::vector<std::atomic<int>> runs(n);
      std::vector<size_t> ends(n);
      parallel_runs(n, [&](size_t i, size_t end) {
        runs[i].fetch_add(1, std::memory_order_relaxed);
        ends[i] = end;
      });
      CHECK(std::all_of(runs.begin(), runs.end(), [](const auto& c) { return c.load() == 1; }));
      // Each index's end: its owner's run end (where threads' runs split [0, n)), or its own.
      const size_t t = std::min<size_t>(n, static_cast<size_t>(threads));
      for (size_t r = 0, i = 0; r < t; ++r)
        for (const size_t run_end = n * (r + 1) / t; i < run_end; ++i) {
          CAPTURE(i);
          CHECK((ends[i] == run_end || ends[i] == i + 1));
        }
    }
  }
  // Run 0's owner held at index 0 until another thread has taken its other indices, from the back
  // (unless the other thread took all of run 0 before its owner began).
  set_kernel_threads(2);
  constexpr size_t n = 8;
  std::vector<std::thread::id> by(n);
  std::vector<size_t> ends(n);
  std::atomic<size_t> taken_from_run0{0};
  std::atomic<bool> timed_out{false};
  parallel_runs(n, [&](size_t i, size_t end) {
    by[i] = std::this_thread::get_id();
    ends[i] = end;
    if (i > 0 && i < n / 2) taken_from_run0.fetch_add(1);
    if (i != 0 || end != n / 2) return;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (taken_from_run0.load() < n / 2 - 1)
      if (std::chrono::steady_clock::now() > deadline) return timed_out.store(true);
  });
  REQUIRE_FALSE(timed_out.load());
  const bool owner_began = ends[0] == n / 2;
  CAPTURE(owner_began);
  for (size_t i = owner_began ? 1 : 0; i < n / 2; ++i) {
    CAPTURE(i);
    if (owner_began) CHECK(by[i] != by[0]);
    CHECK(ends[i] == i + 1);
  }
}
