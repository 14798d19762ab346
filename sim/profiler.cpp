#include "sim/profiler.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/step_runner.hpp"

namespace hearth::sim {

namespace {

// One shape of the grid: `decodes` sequences each decoding one token at position `context`,
// and optionally one prompt chunk of `chunk` tokens starting at `chunk_start`.
struct shape {
  uint32_t decodes = 0, context = 0;
  uint32_t chunk = 0, chunk_start = 0;
};

// The decode grid stays within max_positions at once (a 64-sequence step at context 256, not
// 2048): the pool is the backend's, and a 1b model's KV takes 32 KiB per position.
constexpr uint64_t max_positions = 16384 + 2048;

// Shapes past the model's context are left out: a model of 2048 positions gets them all.
std::vector<shape> grid(uint32_t n_ctx) {
  std::vector<shape> g;
  for (uint32_t ctx : {32u, 256u, 1024u, 1984u})
    for (uint32_t n : {1u, 2u, 4u, 8u, 16u, 32u, 64u})
      if (uint64_t{n} * (ctx + 1) <= 16384 && ctx < n_ctx) g.push_back({n, ctx, 0, 0});
  for (uint32_t start : {0u, 1024u, 1536u})
    for (uint32_t c : {8u, 16u, 32u, 64u, 128u, 256u, 512u})
      if (start + c <= n_ctx) g.push_back({0, 0, c, start});
  for (uint32_t n : {4u, 16u})
    for (uint32_t c : {32u, 128u, 256u}) g.push_back({n, 256, c, 0});
  return g;
}

// The step of a shape, each sequence on blocks of its own (the KV's contents do not matter for
// the time: the same work is done on any values).
step make_step(const shape& sh, token_id filler, uint32_t block_size) {
  step s;
  uint32_t next_block = 0;
  auto blocks_for = [&](uint32_t positions) {
    std::vector<uint32_t> b((positions + block_size - 1) / block_size);
    std::iota(b.begin(), b.end(), next_block);
    next_block += static_cast<uint32_t>(b.size());
    return b;
  };
  for (uint32_t i = 0; i < sh.decodes; ++i) {
    step_seq q;
    q.id = i + 1;
    q.tokens = {filler};
    q.start_pos = sh.context;
    q.blocks = blocks_for(sh.context + 1);
    q.sample = true;
    q.sampling.temperature = 0;  // greedy, as the bench's requests draw
    q.draw = 1;
    s.seqs.push_back(std::move(q));
  }
  if (sh.chunk > 0) {
    step_seq q;
    q.id = sh.decodes + 1;
    q.tokens.assign(sh.chunk, filler);
    q.start_pos = sh.chunk_start;
    q.blocks = blocks_for(sh.chunk_start + sh.chunk);
    q.sample = true;
    q.sampling.temperature = 0;  // greedy, as the bench's requests draw
    s.seqs.push_back(std::move(q));
  }
  return s;
}

// Standard deviation / mean of a few times (0 for one).
double relative_spread(const std::vector<double>& ms) {
  if (ms.size() < 2) return 0;
  double mean = 0, sq = 0;
  for (double x : ms) mean += x;
  mean /= static_cast<double>(ms.size());
  for (double x : ms) sq += (x - mean) * (x - mean);
  return std::sqrt(sq / static_cast<double>(ms.size() - 1)) / mean;
}

double median(std::vector<double> ms) {
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

status<> fit_remeasuring(step_profile& p, std::vector<profile_point> points,
                         const std::function<double(size_t)>& measure, unsigned retries) {
  constexpr double slow = 1.25;
  for (unsigned round = 0;; ++round) {
    if (auto st = fit(p, points); !st) return st;
    if (round == retries) return {};
    step_profile backend = p;
    backend.overhead_ms = 0;  // the points are backend times
    bool remeasured = false;
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].ms <= slow * backend.predict_ms(points[i])) continue;
      points[i].ms = std::min(points[i].ms, measure(i));
      remeasured = true;
    }
    if (!remeasured) return {};
  }
}

uint64_t profile_positions() {
  return max_positions;
}

result<step_profile> measure_profile(backend& be, token_id filler, const profile_options& opt) {
  const uint32_t block = be.kv().layout().block_size;
  if (uint64_t{be.kv().n_blocks()} * block < max_positions)
    return error{errc::invalid_argument, "step profile: the KV pool holds " +
                                             std::to_string(uint64_t{be.kv().n_blocks()} * block) +
                                             " positions; the grid needs " + std::to_string(max_positions)};
  if (be.params().n_ctx_train < 1024 + 512)
    return error{errc::invalid_argument, "step profile: the model's context (" +
                                             std::to_string(be.params().n_ctx_train) +
                                             ") is shorter than 1536"};
  step_runner runner(be);
  const auto shapes = grid(be.params().n_ctx_train);
  std::vector<profile_point> points;
  std::vector<double> spreads;  // each shape's relative standard deviation over its repeats
  // Its runs' times, the first (warm-up: first touches of its blocks, primitives for this m) left out.
  const auto run_shape = [&](size_t i, std::vector<double>& ms) -> status<> {
    const step s = make_step(shapes[i], filler, block);
    (void)runner.run(s);
    for (unsigned r = 0; r < std::max(1u, opt.repeats); ++r) {
      const step_result res = runner.run(s);
      if (!res.error.empty()) return error{errc::invalid_argument, "step profile: " + res.error};
      ms.push_back(res.compute_ms);
    }
    return {};
  };
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> ms;
    if (auto st = run_shape(i, ms); !st) return st.error();
    spreads.push_back(relative_spread(ms));
    profile_point pt = shape_of(make_step(shapes[i], filler, block));
    pt.ms = median(ms);
    points.push_back(pt);
    if (opt.progress) opt.progress(i + 1, shapes.size());
  }
  const std::vector<profile_point> first = points;
  const auto again = [&](size_t i) {
    std::vector<double> ms;
    const double t = run_shape(i, ms) ? median(ms) : std::numeric_limits<double>::infinity();
    if (opt.measured_again) opt.measured_again(first[i], first[i].ms, t);
    return t;
  };
  step_profile p;
  if (auto st = fit_remeasuring(p, std::move(points), again); !st) return st.error();
  // The typical shape's spread: a few slow outliers (a page fault, a timer) do not set it.
  std::nth_element(spreads.begin(), spreads.begin() + static_cast<std::ptrdiff_t>(spreads.size() / 2),
                   spreads.end());
  p.noise = spreads[spreads.size() / 2];
  return p;
}

}  // namespace hearth::sim
