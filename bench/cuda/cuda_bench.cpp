#include "bench/cuda/cuda_bench.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <random>

#include <cuda_runtime_api.h>
#include <nlohmann/json.hpp>

#include "bench/kernels/model_work.hpp"
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_gemm.hpp"
#include "model/gguf.hpp"
#include "model/tensor_types.hpp"

namespace hearth {
namespace {

using clock_type = std::chrono::steady_clock;

struct plan {
  std::vector<uint32_t> prompts, contexts, batches;
  int reps;             // timed prefill runs and GEMM calls (after a warm-up)
  uint32_t iterations;  // timed decode iterations (after one warm-up)
  uint32_t gemm_m;
  size_t copy_bytes;
};

plan make_plan(bool quick) {
  if (quick) return {{64, 128}, {64}, {1, 4}, 3, 4, 128, size_t{64} << 20};
  // 1 GiB copies: far beyond the 60 MB L2. GEMM at m = 512, the prompt the prefill target names.
  return {{128, 512}, {256, 1024}, {1, 16, 64}, 10, 16, 512, size_t{1} << 30};
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Seconds per call of `run`, the median of reps after a warm-up, timed by events on `s`.
template <class F>
result<double> time_on_stream(cudaStream_t s, int reps, F&& run) {
  cudaEvent_t start = nullptr, stop = nullptr;
  if (auto st = cuda::check(cudaEventCreate(&start), "an event"); !st) return st.error();
  if (auto st = cuda::check(cudaEventCreate(&stop), "an event"); !st) {
    cudaEventDestroy(start);
    return st.error();
  }
  std::vector<double> times;
  status<> st = run();
  for (int i = 0; st && i < reps; ++i) {
    cudaEventRecord(start, s);
    st = run();
    cudaEventRecord(stop, s);
    if (st) st = cuda::check(cudaEventSynchronize(stop), "timing on the device");
    float ms = 0;
    if (st) st = cuda::check(cudaEventElapsedTime(&ms, start, stop), "reading a timer");
    times.push_back(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (!st) return st.error();
  return median(times);
}

result<double> copy_gbps(size_t bytes, int reps) {
  auto a = cuda::device_buffer::create(bytes, "the copy ceiling");
  auto b = cuda::device_buffer::create(bytes, "the copy ceiling");
  auto s = cuda::stream::create();
  if (!a || !b || !s) return (!a ? a.error() : !b ? b.error() : s.error());
  auto t = time_on_stream(s->get(), reps, [&] {
    return cuda::check(cudaMemcpyAsync(b->get(), a->get(), bytes, cudaMemcpyDeviceToDevice, s->get()),
                       "a copy");
  });
  if (!t) return t.error();
  return 2.0 * static_cast<double>(bytes) / *t / 1e9;  // read and written
}

// cuBLASLt at each linear shape, m rows, in the compute type; the combined rate weighs each shape
// by its FLOPs in one token's forward.
status<> gemm_ceilings(cuda_bench_report& r, const plan& p) {
  auto s = cuda::stream::create();
  if (!s) return s.error();
  auto mm = cuda::gemm::create(s->get());
  if (!mm) return mm.error();
  const cuda::act_type t = r.compute == compute_type::bf16 ? cuda::act_type::bf16 : cuda::act_type::f32;
  const size_t elem = t == cuda::act_type::bf16 ? 2 : 4;
  double flops = 0, seconds = 0;
  for (const linear_shape& shape : model_shapes(r.hp)) {
    auto x = cuda::device_buffer::create(size_t{p.gemm_m} * shape.n_in * elem, "a GEMM input");
    auto w = cuda::device_buffer::create(size_t{shape.n_out} * shape.n_in * elem, "GEMM weights");
    auto y = cuda::device_buffer::create(size_t{p.gemm_m} * shape.n_out * 4, "a GEMM output");
    if (!x || !w || !y) return !x ? x.error() : !w ? w.error() : y.error();
    // Not zeros: the tensor cores run zeros faster than data (docs/cuda.md).
    cudaMemsetAsync(x->get(), 0x3c, x->size(), s->get());
    cudaMemsetAsync(w->get(), 0x3b, w->size(), s->get());
    auto sec = time_on_stream(s->get(), p.reps, [&] {
      return (*mm)->run(x->get(), w->get(), y->as<float>(), p.gemm_m, shape.n_out, shape.n_in, t);
    });
    if (!sec) return sec.error();
    const double f = 2.0 * p.gemm_m * shape.n_in * shape.n_out;
    r.gemm.push_back({shape.name, p.gemm_m, shape.n_in, shape.n_out, f / *sec / 1e12});
    flops += f * shape.count;
    seconds += *sec * shape.count;
  }
  r.gemm_combined_tflops = flops / seconds / 1e12;
  return {};
}

struct bench_context {
  backend& be;
  const plan& p;
  std::mt19937_64 rng;
  uint32_t per_seq;  // blocks of one sequence
  std::vector<uint32_t> table;

  std::span<const uint32_t> blocks(uint32_t s) const {
    return std::span(table).subspan(size_t{s} * per_seq, per_seq);
  }
  std::vector<token_id> tokens(uint32_t n) {
    std::vector<token_id> t(n);
    for (auto& x : t) x = static_cast<token_id>(rng() % be.params().n_vocab);
    return t;
  }
};

result<cuda_prefill_result> bench_prefill(bench_context& c, uint32_t n, double gemm_tflops) {
  const auto tokens = c.tokens(n);
  const batch_seq seq{tokens, 0, c.blocks(0)};
  batch_logits out;
  std::vector<double> times;
  for (int rep = 0; rep <= c.p.reps; ++rep) {  // rep 0 warms up
    const auto t0 = clock_type::now();
    if (auto st = c.be.forward({&seq, 1}, out); !st) return st.error();
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  cuda_prefill_result r{.tokens = n, .seconds = median(times)};
  r.tok_per_s = n / r.seconds;
  r.tflops = prefill_gflop(c.be.params(), n) / r.seconds / 1e3;
  r.pct_of_gemm = 100.0 * r.tflops / gemm_tflops;
  return r;
}

// Sequences [0, batch) with `context` cached positions: sequence 0 prefilled, the others given
// copies of its blocks through the pool's own copies (decode reads the same bytes whatever they hold).
status<> fill_contexts(bench_context& c, uint32_t batch, uint32_t context) {
  const auto tokens = c.tokens(context);
  const batch_seq seq{tokens, 0, c.blocks(0)};
  batch_logits out;
  if (auto st = c.be.forward({&seq, 1}, out); !st) return st;
  const kv_layout& l = c.be.kv().layout();
  const uint32_t used = (context + l.block_size - 1) / l.block_size;
  std::vector<std::byte> bytes(size_t{used} * l.block_bytes());
  if (auto st = c.be.kv().read_blocks(c.blocks(0).first(used), bytes); !st) return st;
  for (uint32_t s = 1; s < batch; ++s) {
    if (auto st = c.be.kv().write_blocks(c.blocks(s).first(used), bytes); !st) return st;
  }
  return {};
}

result<cuda_decode_result> bench_decode(bench_context& c, uint32_t batch, uint32_t context,
                                        double weights_read, double copy) {
  if (auto st = fill_contexts(c, batch, context); !st) return st.error();
  const auto tokens = c.tokens(batch);
  std::vector<batch_seq> seqs(batch);
  std::vector<double> times;
  batch_logits out;
  for (uint32_t it = 0; it <= c.p.iterations; ++it) {  // iteration 0 warms up
    for (uint32_t s = 0; s < batch; ++s) seqs[s] = {{&tokens[s], 1}, context + it, c.blocks(s)};
    const auto t0 = clock_type::now();
    if (auto st = c.be.forward(seqs, out); !st) return st.error();
    if (it > 0) times.push_back(seconds_since(t0));
  }
  const kv_layout& l = c.be.kv().layout();
  cuda_decode_result r{.batch = batch, .context = context, .step_seconds = median(times)};
  r.tok_per_s = batch / r.step_seconds;
  r.bytes_per_step = weights_read + static_cast<double>(batch) * context * l.block_bytes() / l.block_size;
  r.gbps = r.bytes_per_step / r.step_seconds / 1e9;
  r.pct_of_copy = 100.0 * r.gbps / copy;
  return r;
}

status<> run_backend(cuda_bench_report& r, const plan& p) {
  auto f = gguf::file::open(r.model_path);
  if (!f) return error{errc::io, r.model_path + ": " + f.error().message()};
  const uint32_t per_seq_positions =
      *std::max_element(p.contexts.begin(), p.contexts.end()) + p.iterations + 1;
  const uint32_t batch = *std::max_element(p.batches.begin(), p.batches.end());
  const uint32_t positions =
      std::max(per_seq_positions, *std::max_element(p.prompts.begin(), p.prompts.end()));
  const auto t0 = clock_type::now();
  auto be = cuda_backend::load(
      *f, {.compute = r.compute, .kv_tokens = uint64_t{positions} * batch + 16 * batch, .device = r.device});
  if (!be) return error{be.error().code, r.model_path + ": " + be.error().message};
  r.load_seconds = seconds_since(t0);
  r.hp = (*be)->params();
  r.weight_bytes = static_cast<double>((*be)->weight_bytes());
  r.embedding_bytes =
      static_cast<double>(r.hp.n_vocab) * r.hp.n_embd * (r.compute == compute_type::bf16 ? 2 : 4);
  if (auto st = gemm_ceilings(r, p); !st) return st;
  const uint32_t bs = (*be)->kv().layout().block_size;
  bench_context c{**be, p, std::mt19937_64(std::random_device{}()), (positions + bs - 1) / bs, {}};
  c.table.resize(size_t{c.per_seq} * batch);
  std::iota(c.table.begin(), c.table.end(), 0u);
  for (uint32_t n : p.prompts) {
    auto pr = bench_prefill(c, n, r.gemm_combined_tflops);
    if (!pr) return pr.error();
    r.prefill.push_back(*pr);
  }
  // The head reads its weights each step; the embedding table only a row per token.
  const double weights_read = r.weight_bytes - (r.hp.tied_output ? 0.0 : r.embedding_bytes);
  for (uint32_t ctx : p.contexts) {
    double batch1 = 0;
    for (uint32_t b : p.batches) {
      auto dr = bench_decode(c, b, ctx, weights_read, r.copy_gbps);
      if (!dr) return dr.error();
      if (b == 1) batch1 = dr->tok_per_s;
      dr->vs_batch1 = batch1 > 0 ? dr->tok_per_s / batch1 : 0.0;
      r.decode.push_back(*dr);
    }
  }
  return {};
}

}  // namespace

result<cuda_bench_report> run_cuda_bench(const cuda_bench_options& opt) {
  std::string why;
  if (cuda_backend::device_count(&why) == 0)
    return error{errc::unsupported, "bench kernels: no CUDA device: " + why};
  cuda_bench_report r;
  r.model_path = opt.model_path;
  r.compute = opt.compute;
  r.device = opt.device;
  r.quick = opt.quick;
  if (auto st = cuda::check(cudaSetDevice(opt.device), "selecting device " + std::to_string(opt.device)); !st)
    return st.error();
  cudaDeviceProp prop{};
  if (auto st = cuda::check(cudaGetDeviceProperties(&prop, opt.device), "reading the device"); !st)
    return st.error();
  r.device_name = prop.name;
  const plan p = make_plan(opt.quick);
  auto copy = copy_gbps(p.copy_bytes, p.reps);
  if (!copy) return copy.error();
  r.copy_gbps = *copy;
  if (auto st = run_backend(r, p); !st) return st.error();
  return r;
}

void print_cuda_bench(const cuda_bench_report& r, std::FILE* out) {
  std::fprintf(out, "cuda kernels bench: %s on %s (device %d), compute %s%s\n", r.model_path.c_str(),
               r.device_name.c_str(), r.device, to_string(r.compute), r.quick ? ", quick" : "");
  std::fprintf(out, "  weights %.2f GB, loaded in %.2f s\n", r.weight_bytes / 1e9, r.load_seconds);
  std::fprintf(out, "ceilings\n  device copy                    %10.1f GB/s (read + written)\n", r.copy_gbps);
  for (const auto& g : r.gemm)
    std::fprintf(out, "  cublasLt %-8s m=%u %5u x %-6u %8.1f TFLOP/s\n", g.name.c_str(), g.m, g.n_in, g.n_out,
                 g.tflops);
  std::fprintf(out, "  combined (FLOP-weighted)       %10.1f TFLOP/s\n", r.gemm_combined_tflops);
  for (const auto& p : r.prefill)
    std::fprintf(out, "prefill %4u tokens  %9.1f tok/s  %7.1f TFLOP/s  %5.1f %% of GEMM\n", p.tokens,
                 p.tok_per_s, p.tflops, p.pct_of_gemm);
  for (const auto& d : r.decode)
    std::fprintf(out,
                 "decode batch %3u ctx %5u  %9.1f tok/s  %8.1f GB/s  %5.1f %% of copy  %6.2f x batch 1\n",
                 d.batch, d.context, d.tok_per_s, d.gbps, d.pct_of_copy, d.vs_batch1);
}

std::string cuda_bench_json(const cuda_bench_report& r) {
  nlohmann::json j{{"model", r.model_path},           {"device", r.device_name},
                   {"compute", to_string(r.compute)}, {"quick", r.quick},
                   {"copy_gbps", r.copy_gbps},        {"gemm_combined_tflops", r.gemm_combined_tflops},
                   {"weight_bytes", r.weight_bytes},  {"load_seconds", r.load_seconds}};
  for (const auto& g : r.gemm)
    j["gemm"].push_back(
        {{"name", g.name}, {"m", g.m}, {"n_in", g.n_in}, {"n_out", g.n_out}, {"tflops", g.tflops}});
  for (const auto& p : r.prefill)
    j["prefill"].push_back({{"tokens", p.tokens},
                            {"tok_per_s", p.tok_per_s},
                            {"tflops", p.tflops},
                            {"pct_of_gemm", p.pct_of_gemm}});
  for (const auto& d : r.decode) {
    j["decode"].push_back({{"batch", d.batch},
                           {"context", d.context},
                           {"tok_per_s", d.tok_per_s},
                           {"gbps", d.gbps},
                           {"pct_of_copy", d.pct_of_copy},
                           {"vs_batch1", d.vs_batch1}});
  }
  return j.dump(2);
}

}  // namespace hearth
