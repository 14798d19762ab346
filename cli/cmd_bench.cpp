// hearth bench kernels: the machine's ceilings and the CPU backend against them, in one run
// (bench/kernels_bench.hpp); a table on stdout, every figure as JSON with --json.
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/kernels/kernels_bench.hpp"
#ifdef HEARTH_HAS_CUDA
#include "bench/cuda/cuda_bench.hpp"
#endif
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "common/text_file.hpp"

namespace hearth::cli {
namespace {

struct bench_kernels_args {
  std::string model;
  std::string json_path;
  compute_args compute;
  bool quick = false;
  std::string backend = "cpu";
  int device = 0;
};

nlohmann::json to_json(const kernels_bench_report& r) {
  const hparams& hp = r.hp;
  nlohmann::json j;
  j["config"] = {{"model", r.model_path},
                 {"arch", to_string(hp.arch)},
                 {"n_vocab", hp.n_vocab},
                 {"n_ctx_train", hp.n_ctx_train},
                 {"n_embd", hp.n_embd},
                 {"n_layer", hp.n_layer},
                 {"n_head", hp.n_head},
                 {"n_head_kv", hp.n_head_kv},
                 {"n_ff", hp.n_ff},
                 {"head_dim", hp.head_dim},
                 {"threads", r.threads},
                 {"compute", to_string(r.compute)},
                 {"kernels", to_string(r.kernels)},
                 {"cpu", r.cpu},
                 {"kv_dtype", to_string(r.kv)},
                 {"block_size", r.block_size},
                 {"bf16_attention", r.bf16_attention},
                 {"quick", r.quick}};
  for (const auto& g : r.gemm) {
    j["gemm"]["shapes"].push_back(
        {{"name", g.name}, {"m", g.m}, {"n_in", g.n_in}, {"n_out", g.n_out}, {"gflops", g.gflops}});
    for (const auto& [path, gflops] : g.paths) j["gemm"]["shapes"].back()["paths"][to_string(path)] = gflops;
  }
  for (const auto& [name, s] : r.plans) {
    nlohmann::json plan = {{"name", name},
                           {"n_in", s.n_in},
                           {"n_out", s.n_out},
                           {"why", s.why},
                           {"tune_seconds", s.tune_seconds}};
    for (uint32_t b = 0; b < n_m_buckets; ++b)
      plan["paths"].push_back({{"m", bucket_m[b]}, {"path", to_string(s.plan.paths[b])}});
    for (const auto& rate : s.rates) plan["rates"][to_string(rate.path)] = rate.gflops;
    j["plans"].push_back(plan);
  }
  j["gemm"]["combined_gflops"] = r.gemm_combined_gflops;
  j["stream"] = {{"bytes", r.stream_bytes}, {"gbps", r.stream_gbps}};
  for (const auto& p : r.prefill) {
    j["prefill"].push_back({{"tokens", p.tokens},
                            {"seconds", p.seconds},
                            {"tok_per_s", p.tok_per_s},
                            {"gflop", p.gflop},
                            {"gflops", p.gflops},
                            {"pct_of_gemm", p.pct_of_gemm}});
  }
  for (const auto& d : r.decode) {
    j["decode"].push_back({{"batch", d.batch},
                           {"context", d.context},
                           {"step_seconds", d.step_seconds},
                           {"tok_per_s", d.tok_per_s},
                           {"vs_batch1", d.vs_batch1},
                           {"vs_batch1_bound", d.vs_batch1_bound},
                           {"bytes_per_step", d.bytes_per_step},
                           {"gbps", d.gbps},
                           {"stream_gbps", d.stream_gbps},
                           {"pct_of_stream", d.pct_of_stream},
                           {"gflop_per_step", d.gflop_per_step},
                           {"gflops", d.gflops},
                           {"pct_of_gemm", d.pct_of_gemm}});
  }
  j["batch16_over_batch1"] = r.batch16_over_batch1;
  j["batch16_bound"] = r.batch16_bound;
  j["batch16_pct_of_gemm"] = r.batch16_pct_of_gemm;
  j["memory"] = {{"weight_bytes", r.weight_bytes},   {"embedding_bytes", r.embedding_bytes},
                 {"kv_pool_bytes", r.kv_pool_bytes}, {"peak_rss_bytes", r.peak_rss_bytes},
                 {"rss_ratio", r.rss_ratio},         {"file_bytes", r.file_bytes},
                 {"rss_vs_file", r.rss_vs_file}};
  j["load_seconds"] = r.load_seconds;
  return j;
}

// The CUDA backend's bench (bench/cuda/cuda_bench.hpp): its own ceilings, measured in the same run.
int run_bench_cuda(const bench_kernels_args& a) {
#ifdef HEARTH_HAS_CUDA
  auto r = run_cuda_bench({.model_path = a.model,
                           .compute = apply_compute_args(a.compute),
                           .device = a.device,
                           .quick = a.quick});
  if (!r) return fail(r.error().message);
  print_cuda_bench(*r, stdout);
  if (a.json_path.empty()) return 0;
  if (auto st = write_text_file(a.json_path, cuda_bench_json(*r) + '\n'); !st)
    return fail(st.error().message);
  return 0;
#else
  (void)a;
  return fail("bench kernels --backend cuda: this build of Hearth has no CUDA backend (docs/cuda.md)");
#endif
}

int run_bench_kernels(const bench_kernels_args& a) {
  if (a.backend == "cuda") return run_bench_cuda(a);
  auto r = run_kernels_bench({.model_path = a.model,
                              .compute = apply_compute_args(a.compute),
                              .kernels = kernels_of(a.compute),
                              .quick = a.quick});
  if (!r) return fail(r.error().message);
  print_kernels_bench(*r, stdout);
  if (a.json_path.empty()) return 0;
  if (auto st = write_text_file(a.json_path, to_json(*r).dump(2) + '\n'); !st)
    return fail(st.error().message);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto* bench = app.add_subcommand(
      "bench", "Measure the machine's ceilings, the compute against them, and household serving");
  bench->require_subcommand(1);
  auto* cmd =
      bench->add_subcommand("kernels", "GEMM and STREAM ceilings, prefill, decode and memory of one model");
  auto a = std::make_shared<bench_kernels_args>();
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("--json", a->json_path, "Write every figure and the configuration to this file");
  add_compute_options(cmd, a->compute);
  cmd->add_flag("--quick", a->quick, "Seconds, not minutes: fewer reps, contexts 64/128, batches 1/4");
  cmd->add_option("--backend", a->backend, "cpu | cuda: the CUDA backend against the device's own ceilings")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--device", a->device, "The CUDA device (--backend cuda)")->check(CLI::NonNegativeNumber);
  cmd->callback([a, &exit_code] { exit_code = run_bench_kernels(*a); });
  add_bench_engine_command(*bench, exit_code);
  add_bench_profile_command(*bench, exit_code);
  add_bench_calibrate_command(*bench, exit_code);
  add_bench_serve_command(*bench, exit_code);
  add_bench_sweep_command(*bench, exit_code);
}

}  // namespace hearth::cli
