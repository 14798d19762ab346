#include "kernels/matmul_bench.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <vector>

#include "common/rng.hpp"

namespace hearth {
namespace {

std::vector<float> random_values(rng& r, size_t n) {
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.unit() * 2.0 - 1.0);
  return v;
}

}  // namespace

double measure_gemm_peak_gflops(uint32_t m, uint32_t n_in, uint32_t n_out, const matmul_plan& plan,
                                double seconds) {
  if (m == 0 || n_in == 0 || n_out == 0) return 0.0;
  rng r(0x6a09e667f3bcc908ull);
  const auto w = random_values(r, size_t{n_out} * n_in);
  const auto x = random_values(r, size_t{m} * n_in);
  std::vector<float> y(size_t{m} * n_out);
  const weight_part part{tensor_type::f32, std::as_bytes(std::span(w)), n_out, {}};
  auto lin = linear::create(std::span(&part, 1), n_in, plan);
  if (!lin) return 0.0;

  using clock = std::chrono::steady_clock;
  // Warm-up: primitive creation, page faults, caches, the OpenMP team.
  for (int i = 0; i < 3; ++i) lin->forward(x.data(), y.data(), m);
  std::vector<double> times;
  const auto end = clock::now() + std::chrono::duration<double>(seconds);
  do {
    const auto t0 = clock::now();
    lin->forward(x.data(), y.data(), m);
    times.push_back(std::chrono::duration<double>(clock::now() - t0).count());
  } while (clock::now() < end);
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return 2.0 * m * n_in * n_out / times[times.size() / 2] / 1e9;
}

}  // namespace hearth
