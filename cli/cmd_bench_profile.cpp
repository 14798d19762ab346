// hearth bench profile: the step-time model the simulator runs on (sim/step_profile.hpp),
// measured on this machine's backend for one model, thread count and compute type, with the
// runtime's own cost per step (`hearth bench engine`'s null backend) as its overhead.

#include "bench/engine/engine_bench.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "common/text_file.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/kernel_tuner.hpp"
#include "kernels/parallel.hpp"
#include "model/model_file.hpp"
#include "sim/profiler.hpp"

namespace hearth::cli {
namespace {

struct bench_profile_args {
  std::string model;
  std::string out;
  compute_args compute;
  bool quick = false;
};

int run_bench_profile(const bench_profile_args& a) {
  auto m = open_model_file(a.model);
  if (!m) return fail(m.error().message);
  const compute_type ct = apply_compute_args(a.compute);
  auto be = cpu_backend::load(
      *m->gguf, {.compute = ct, .kv_tokens = sim::profile_positions(), .kernels = kernels_of(a.compute)});
  if (!be) return fail(be.error().message);
  const auto ids = m->tok->encode(" the", {.add_bos = false, .parse_special = false});
  progress_line measuring("profiling " + a.model);
  auto p = sim::measure_profile(**be, ids.empty() ? 0 : ids.back(),
                                {.repeats = a.quick ? 2u : 5u, .progress = [&](size_t done, size_t total) {
                                   measuring.update(done, total);
                                 }});
  measuring.finish();
  if (!p) return fail(p.error().message);
  be->reset();  // the engine bench loads its own
  auto overhead = run_engine_bench({.model_path = a.model,
                                    .compute = ct,
                                    .kernels = kernels_of(a.compute),
                                    .seqs = 16,
                                    .prompt = 16,
                                    .gen = a.quick ? 16u : 64u,
                                    .threads = static_cast<unsigned>(kernel_threads()),
                                    .real_run = false});
  if (!overhead) return fail(overhead.error().message);
  p->cpu = cpu_identity().substr(0, cpu_identity().find(" |"));
  p->model = a.model;
  p->compute = to_string(ct);
  p->threads = static_cast<unsigned>(kernel_threads());
  p->overhead_ms = overhead->null_run.overhead_ms_per_step;
  std::printf(
      "hearth bench profile: %zu steps measured on %s, %u threads, %s; fit within %.1f %% (rms); "
      "runtime overhead %.3f ms per step\n",
      p->points.size(), p->cpu.c_str(), p->threads, p->compute.c_str(), 100 * p->rms_error, p->overhead_ms);
  if (auto st = write_text_file(a.out, sim::to_json(*p)); !st) return fail(st.error().message);
  return 0;
}

}  // namespace

void add_bench_profile_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand("profile", "Measure the step-time model the simulator runs on");
  auto a = std::make_shared<bench_profile_args>();
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("-o,--out", a->out, "The profile's JSON file")->required();
  cmd->add_flag("--quick", a->quick, "Two runs per shape instead of five");
  add_compute_options(cmd, a->compute);
  cmd->callback([a, &exit_code] { exit_code = run_bench_profile(*a); });
}

}  // namespace hearth::cli
