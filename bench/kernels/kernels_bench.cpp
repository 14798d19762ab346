#include "bench/kernels/kernels_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>

#include <sys/resource.h>

#include "bench/kernels/model_work.hpp"
#include "bench/kernels/stream_triad.hpp"
#include "common/rng.hpp"
#include "kernels/matmul_bench.hpp"
#include "kernels/parallel.hpp"
#include "model/model_file.hpp"

namespace hearth {
namespace {

using clock_type = std::chrono::steady_clock;

struct plan {
  std::vector<uint32_t> prompts, contexts, batches;
  int reps;             // timed prefill runs (after one warm-up)
  uint32_t iterations;  // timed decode steps of each batch (bench_decode: taken in rounds)
  uint32_t gemm_m;
  double gemm_seconds;  // per shape
  size_t stream_elems;  // per array (doubles)
};

plan make_plan(bool quick) {
  if (quick) return {{64, 128}, {64, 128}, {1, 4}, 2, 3, 64, 0.05, size_t{1} << 20};
  // 3 x 24 Mi doubles = 576 MiB: far beyond any cache, the triad reads and writes memory.
  // GEMM at m = 256: the most rows one matmul call takes (longer prompts run in 256-row chunks).
  return {{128, 512}, {256, 1024}, {1, 4, 16, 64}, 5, 8, 256, 0.5, size_t{24} << 20};
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::vector<token_id> random_tokens(rng& r, uint32_t n, uint32_t n_vocab) {
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(r.next() % n_vocab);
  return t;
}

// One sequence's positions: the longest context and the one its decode steps write, or the
// longest prompt.
uint32_t positions_per_seq(const plan& p) {
  const uint32_t ctx = *std::max_element(p.contexts.begin(), p.contexts.end()) + 1;
  return std::max(ctx, *std::max_element(p.prompts.begin(), p.prompts.end()));
}

// Every path the compute type has here, and oneDNN's f32 (which needs an f32 copy of the weights,
// twice the memory, but a ceiling lower than what some path achieves would be no ceiling).
std::vector<matmul_path> ceiling_paths(compute_type ct) {
  auto paths = paths_for(ct);
  if (ct != compute_type::f32) paths.insert(paths.begin(), matmul_path::onednn_f32);
  return paths;
}

void measure_gemm(kernels_bench_report& r, const plan& p) {
  double flops = 0, seconds = 0;
  for (const auto& s : model_shapes(r.hp)) {
    gemm_shape_result g{s.name, p.gemm_m, s.n_in, s.n_out, {}, 0};
    for (matmul_path path : ceiling_paths(r.compute)) {
      g.paths.emplace_back(path, measure_gemm_peak_gflops(p.gemm_m, s.n_in, s.n_out,
                                                          matmul_plan::uniform(path), p.gemm_seconds));
      g.gflops = std::max(g.gflops, g.paths.back().second);
    }
    r.gemm.push_back(g);
    // Harmonic weighting: the time one token's forward would take if every shape ran at its ceiling.
    const double f = 2.0 * s.n_in * s.n_out * s.count;
    flops += f;
    seconds += g.gflops > 0 ? f / (g.gflops * 1e9) : 0.0;
  }
  const bool all_ran = std::all_of(r.gemm.begin(), r.gemm.end(), [](const auto& g) { return g.gflops > 0; });
  r.gemm_combined_gflops = all_ran ? flops / seconds / 1e9 : 0.0;
}

struct bench_context {
  cpu_backend& be;
  const plan& p;
  stream_triad& triad;
  std::vector<double>& triad_runs;  // every run of the triad, for the report's median
  rng r;
  uint32_t blocks_per_seq;
  std::vector<uint32_t> table;  // sequence s owns table[s * blocks_per_seq, (s + 1) * blocks_per_seq)
  batch_logits logits;

  std::span<const uint32_t> blocks(uint32_t s) const {
    return std::span(table).subspan(size_t{s} * blocks_per_seq, blocks_per_seq);
  }
  status<> forward(std::span<const batch_seq> batch) { return be.forward(batch, logits); }
};

result<prefill_result> bench_prefill(bench_context& c, uint32_t n) {
  const auto tokens = random_tokens(c.r, n, c.be.params().n_vocab);
  const batch_seq seq{tokens, 0, c.blocks(0)};
  std::vector<double> times;
  for (int rep = 0; rep <= c.p.reps; ++rep) {  // rep 0 warms up
    const auto t0 = clock_type::now();
    if (auto st = c.forward({&seq, 1}); !st) return st.error();
    if (rep > 0) times.push_back(seconds_since(t0));
  }
  prefill_result out{.tokens = n, .seconds = median(times)};
  out.tok_per_s = n / out.seconds;
  out.gflop = prefill_gflop(c.be.params(), n);
  out.gflops = out.gflop / out.seconds;
  return out;
}

// Fills sequences [0, batch) with `context` cached positions: sequence 0 is prefilled with random
// tokens, the others get copies of its blocks (64 prefills of 1024 tokens would take minutes on
// two cores; decode reads the same bytes whatever they hold).
status<> fill_contexts(bench_context& c, uint32_t batch, uint32_t context) {
  const auto tokens = random_tokens(c.r, context, c.be.params().n_vocab);
  const batch_seq seq{tokens, 0, c.blocks(0)};
  if (auto st = c.forward({&seq, 1}); !st) return st;
  const uint32_t used = (context + c.be.kv().layout().block_size - 1) / c.be.kv().layout().block_size;
  for (uint32_t s = 1; s < batch; ++s) {
    for (uint32_t b = 0; b < used; ++b) {
      const auto src = c.be.kv().block(c.blocks(0)[b]);
      std::copy(src.begin(), src.end(), c.be.kv().block(c.blocks(s)[b]).begin());
    }
  }
  return {};
}

// Every batch at one context, their steps taken in turns: a round is 3 steps of each batch, then 3
// runs of the triad, the first of each not counted. This VM's memory goes through slow and fast
// spells of minutes, and rows timed one after another compared the spells as much as the batches
// (`1b` q4_k_m's batch 16 / batch 1 came out 3.40, 4.45 and 6.14 x in three runs of one build);
// in turns, each row and its triad see the same minutes. Whatever runs first after another kind
// of work runs slowest (Zen 5: the triad's first run after the steps 16-46 GB/s against 48-61
// for the next two; `small` bf16's batch 1 taken one step a round, 5.5-8.3 ms against 3.9-5.5).
result<std::vector<decode_result>> bench_decode(bench_context& c, uint32_t context, double weights_read) {
  constexpr uint32_t per_round = 3;
  const std::vector<uint32_t>& batches = c.p.batches;
  const uint32_t most = *std::max_element(batches.begin(), batches.end());
  if (auto st = fill_contexts(c, most, context); !st) return st.error();
  const auto tokens = random_tokens(c.r, most, c.be.params().n_vocab);
  // Every step writes the same position of each sequence: decode reads the same bytes whatever
  // they hold.
  std::vector<batch_seq> seqs(most);
  for (uint32_t s = 0; s < most; ++s) seqs[s] = {{&tokens[s], 1}, context, c.blocks(s)};
  std::vector<std::vector<double>> times(batches.size());
  std::vector<double> triad;
  const uint32_t rounds = (c.p.iterations + per_round - 2) / (per_round - 1);
  for (uint32_t round = 0; round < rounds; ++round) {
    for (size_t k = 0; k < batches.size(); ++k) {
      for (uint32_t step = 0; step < per_round; ++step) {
        const auto t0 = clock_type::now();
        if (auto st = c.forward(std::span(seqs).first(batches[k])); !st) return st.error();
        if (step > 0) times[k].push_back(seconds_since(t0));
      }
    }
    const auto run = c.triad.run(per_round);
    triad.insert(triad.end(), run.begin() + 1, run.end());
  }
  c.triad_runs.insert(c.triad_runs.end(), triad.begin(), triad.end());
  const kv_layout& l = c.be.kv().layout();
  const double kv_per_position = static_cast<double>(l.block_bytes()) / l.block_size;
  std::vector<decode_result> rows;
  for (size_t k = 0; k < batches.size(); ++k) {
    const uint32_t batch = batches[k];
    decode_result out{
        .batch = batch, .context = context, .step_seconds = median(times[k]), .stream_gbps = median(triad)};
    out.tok_per_s = batch / out.step_seconds;
    out.bytes_per_step = weights_read + static_cast<double>(batch) * context * kv_per_position;
    out.gbps = out.bytes_per_step / out.step_seconds / 1e9;
    out.gflop_per_step = decode_gflop(c.be.params(), batch, context);
    out.gflops = out.gflop_per_step / out.step_seconds;
    rows.push_back(out);
  }
  return rows;
}

status<> run_backend(kernels_bench_report& r, cpu_backend& be, const plan& p, stream_triad& triad) {
  const uint32_t bs = be.kv().layout().block_size;
  const uint32_t per_seq = (positions_per_seq(p) + bs - 1) / bs;
  std::vector<double> triad_runs;
  bench_context c{be,
                  p,
                  triad,
                  triad_runs,
                  rng(std::random_device{}()),
                  per_seq,
                  std::vector<uint32_t>(be.kv().n_blocks()),
                  {}};
  std::iota(c.table.begin(), c.table.end(), 0u);
  for (uint32_t n : p.prompts) {
    auto pr = bench_prefill(c, n);
    if (!pr) return pr.error();
    r.prefill.push_back(*pr);
  }
  const double weights_read = r.weight_bytes - r.embedding_bytes;
  for (uint32_t ctx : p.contexts) {
    auto rows = bench_decode(c, ctx, weights_read);
    if (!rows) return rows.error();
    const double batch1 = rows->front().tok_per_s;  // batches start at 1
    for (auto& d : *rows) {
      d.vs_batch1 = d.tok_per_s / batch1;
      r.decode.push_back(d);
    }
  }
  r.stream_gbps = median(triad_runs);
  return {};
}

}  // namespace

namespace {

double peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return 1024.0 * static_cast<double>(u.ru_maxrss);  // Linux: KiB
}

// VmRSS now, from /proc/self/status; 0 if unreadable.
double resident_bytes() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return 1024.0 * std::strtod(line.c_str() + 6, nullptr);  // kB
  }
  return 0;
}

// The shortest time a decode step can take by the roofline: its bytes at the triad bandwidth,
// or its FLOPs at the GEMM ceiling, whichever is longer.
double roofline_seconds(const kernels_bench_report& r, const decode_result& d) {
  return std::max(d.bytes_per_step / (r.stream_gbps * 1e9), d.gflop_per_step / r.gemm_combined_gflops);
}

// The percentages and ratios that need both the backend's figures and the ceilings.
void compare(kernels_bench_report& r) {
  for (auto& pr : r.prefill) {
    pr.pct_of_gemm = r.gemm_combined_gflops > 0 ? 100.0 * pr.gflops / r.gemm_combined_gflops : 0.0;
  }
  const bool ceilings = r.stream_gbps > 0 && r.gemm_combined_gflops > 0;
  for (auto& d : r.decode) {
    d.pct_of_stream = d.stream_gbps > 0 ? 100.0 * d.gbps / d.stream_gbps : 0.0;
    d.pct_of_gemm = r.gemm_combined_gflops > 0 ? 100.0 * d.gflops / r.gemm_combined_gflops : 0.0;
    const auto b1 = std::find_if(r.decode.begin(), r.decode.end(), [&](const decode_result& e) {
      return e.context == d.context && e.batch == 1;
    });
    if (ceilings && b1 != r.decode.end())
      d.vs_batch1_bound = d.batch * roofline_seconds(r, *b1) / roofline_seconds(r, d);
  }
  const uint32_t shortest = r.decode.empty() ? 0 : r.decode.front().context;
  for (const auto& d : r.decode) {
    if (d.context != shortest || d.batch != 16) continue;
    r.batch16_over_batch1 = d.vs_batch1;
    r.batch16_bound = d.vs_batch1_bound;
    r.batch16_pct_of_gemm = d.pct_of_gemm;
  }
  r.rss_ratio = r.peak_rss_bytes / (r.weight_bytes + r.kv_pool_bytes);
  r.rss_vs_file = r.peak_rss_bytes / (r.file_bytes + r.kv_pool_bytes);
}

result<std::unique_ptr<cpu_backend>> load_backend(kernels_bench_report& r, const plan& p) {
  const auto t0 = clock_type::now();
  auto m = open_model_file(r.model_path);
  if (!m) return m.error();
  if (positions_per_seq(p) > m->hp.n_ctx_train) {
    return error{errc::invalid_argument, "bench needs " + std::to_string(positions_per_seq(p)) +
                                             " positions; the model's context is " +
                                             std::to_string(m->hp.n_ctx_train)};
  }
  const gguf::file* f = m->gguf.get();
  const gguf::tensor_info* embd = f->find_tensor("token_embd.weight");
  if (!embd) return error{errc::malformed, r.model_path + ": no token_embd.weight"};
  r.embedding_bytes = static_cast<double>(embd->n_bytes);
  r.kv = kv_dtype_for(r.compute);
  r.block_size = 16;
  const uint32_t max_batch = *std::max_element(p.batches.begin(), p.batches.end());
  const uint32_t per_seq = (positions_per_seq(p) + r.block_size - 1) / r.block_size * r.block_size;
  auto be = cpu_backend::load(*f, {.compute = r.compute,
                                   .kv = r.kv,
                                   .block_size = r.block_size,
                                   .kv_tokens = uint64_t{max_batch} * per_seq,
                                   .kernels = r.kernels});
  if (!be) return be.error();
  r.load_seconds = seconds_since(t0);
  r.hp = (*be)->params();
  const auto decisions = process_tuner().decisions();
  const auto plans = (*be)->plans();
  const auto shapes = model_shapes(r.hp);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& s = shapes[i];
    const auto d = std::find_if(decisions.begin(), decisions.end(), [&](const shape_plan& sp) {
      return sp.n_in == s.n_in && sp.n_out == s.n_out && sp.ct == r.compute && sp.choice == r.kernels &&
             sp.threads == r.threads && sp.plan == plans[i];
    });
    shape_plan kept{s.n_in, s.n_out, r.compute, r.kernels, r.threads, plans[i], {}, "as stored", 0};
    r.plans.push_back({s.name, d != decisions.end() ? *d : kept});
  }
  r.file_bytes = static_cast<double>(f->size_bytes());
  r.weight_bytes = static_cast<double>((*be)->weight_bytes());
  r.kv_pool_bytes = static_cast<double>((*be)->kv().size_bytes());
  r.bf16_attention = (*be)->attention_in_bf16();
  return be;
}

}  // namespace

result<kernels_bench_report> run_kernels_bench(const kernels_bench_options& opt) {
  const plan p = make_plan(opt.quick);
  kernels_bench_report r;
  r.model_path = opt.model_path;
  r.threads = kernel_threads();
  r.compute = opt.compute;
  r.kernels = opt.kernels;
  r.cpu = cpu_identity();
  r.plan_cache = process_tuner().cache_path();
  r.quick = opt.quick;
  // The triad's arrays are resident from before the load to the peak's reading, so that peak
  // less their resident size is the backend's own.
  const double before_triad = resident_bytes();
  stream_triad triad(p.stream_elems);
  const double triad_resident = resident_bytes() - before_triad;
  r.stream_bytes = static_cast<double>(triad.bytes());
  {
    auto be = load_backend(r, p);
    if (!be) return be.error();
    if (auto st = run_backend(r, **be, p, triad); !st) return st.error();
  }
  // Read before the GEMM ceiling runs, which allocates its own buffers.
  r.peak_rss_bytes = peak_rss_bytes() - triad_resident;
  measure_gemm(r, p);
  compare(r);
  return r;
}

namespace {

// Which path each shape took at each m bucket, and the rates it was chosen by.
void print_plans(const kernels_bench_report& r, std::FILE* out) {
  std::fprintf(out, "matmul paths on %s, kernels %s (plans cached in %s)\n", r.cpu.c_str(),
               to_string(r.kernels), r.plan_cache.empty() ? "no file" : r.plan_cache.c_str());
  std::fprintf(out, "  shape      n_in x n_out  ");
  for (uint32_t m : bucket_m) std::fprintf(out, " m = %-10u", m);
  std::fprintf(out, " why        GFLOP/s at m = 1/16/64/256\n");
  for (const auto& [name, s] : r.plans) {
    std::fprintf(out, "  %-8s %6u x %-6u ", name.c_str(), s.n_in, s.n_out);
    for (matmul_path p : s.plan.paths) std::fprintf(out, " %-14s", to_string(p));
    std::fprintf(out, " %-10s", s.why.c_str());
    for (const auto& rate : s.rates) {
      std::fprintf(out, " %s", to_string(rate.path));
      for (uint32_t b = 0; b < n_m_buckets; ++b) std::fprintf(out, "%c%.0f", b ? '/' : ' ', rate.gflops[b]);
    }
    if (s.tune_seconds > 0) std::fprintf(out, " (%.2f s)", s.tune_seconds);
    std::fprintf(out, "\n");
  }
  std::fprintf(out, "\n");
}

}  // namespace

void print_kernels_bench(const kernels_bench_report& r, std::FILE* out) {
  const hparams& hp = r.hp;
  std::fprintf(out, "model %s: d %u, %u layers, %u/%u heads of %u, ff %u, vocab %u\n", r.model_path.c_str(),
               hp.n_embd, hp.n_layer, hp.n_head, hp.n_head_kv, hp.head_dim, hp.n_ff, hp.n_vocab);
  std::fprintf(out, "threads %d, compute %s, kv %s, block %u, attention in %s%s\n\n", r.threads,
               to_string(r.compute), to_string(r.kv), r.block_size,
               r.bf16_attention ? "bf16 (vdpbf16ps)" : "f32", r.quick ? ", quick" : "");
  print_plans(r, out);
  std::fprintf(out, "GEMM ceiling (m = %u)    n_in x n_out   GFLOP/s by path            ceiling\n",
               r.gemm.empty() ? 0 : r.gemm[0].m);
  for (const auto& g : r.gemm) {
    std::fprintf(out, "  %-8s %14u x %-6u ", g.name.c_str(), g.n_in, g.n_out);
    for (const auto& [path, gflops] : g.paths) std::fprintf(out, " %s %.1f", to_string(path), gflops);
    std::fprintf(out, "   %.1f\n", g.gflops);
  }
  std::fprintf(out, "  combined (FLOP-weighted)       %10.1f\n", r.gemm_combined_gflops);
  std::fprintf(out,
               "STREAM triad over %.0f MiB: %.1f GB/s (median of its runs between the decode rounds)\n\n",
               r.stream_bytes / (1 << 20), r.stream_gbps);
  std::fprintf(out, "prefill  tokens     ms    tok/s   GFLOP/s  %% of GEMM\n");
  for (const auto& p : r.prefill) {
    std::fprintf(out, "         %6u %7.1f %8.1f %9.1f %9.1f\n", p.tokens, 1e3 * p.seconds, p.tok_per_s,
                 p.gflops, p.pct_of_gemm);
  }
  std::fprintf(out,
               "\ndecode  context batch  ms/step    tok/s  vs b=1 (bound)   GB/s  triad  %% of it"
               "  GFLOP/s  %% of GEMM\n");
  for (const auto& d : r.decode) {
    std::fprintf(out, "        %7u %5u %8.2f %8.1f %7.2f %7.2f %6.1f %6.1f %8.1f %8.1f %10.1f\n", d.context,
                 d.batch, 1e3 * d.step_seconds, d.tok_per_s, d.vs_batch1, d.vs_batch1_bound, d.gbps,
                 d.stream_gbps, d.pct_of_stream, d.gflops, d.pct_of_gemm);
  }
  std::fprintf(
      out, "batch 16 / batch 1 aggregate tok/s: %.2f, roofline bound %.2f; batch 16 at %.1f%% of GEMM\n\n",
      r.batch16_over_batch1, r.batch16_bound, r.batch16_pct_of_gemm);
  std::fprintf(
      out,
      "peak RSS %.1f MiB = %.2f x (weights %.1f MiB + KV pool %.1f MiB) = %.2f x (file %.1f MiB + KV pool)\n",
      r.peak_rss_bytes / (1 << 20), r.rss_ratio, r.weight_bytes / (1 << 20), r.kv_pool_bytes / (1 << 20),
      r.rss_vs_file, r.file_bytes / (1 << 20));
  std::fprintf(out, "load %.2f s (open, map, check, plan the matmuls, map the %.0f MiB KV pool, warm up)\n",
               r.load_seconds, r.kv_pool_bytes / (1 << 20));
}

}  // namespace hearth
