// hearth bench profile: the step-time model the simulator runs on (sim/step_profile.hpp),
// measured on this machine's backend for one model, thread count and compute type. Its overhead
// and scale are what serving costs beyond the backend's time alone: the runtime's messages, and
// the gateway's and the client's threads on the same cores, which slow the compute too. Both are
// calibrated on a short run of the household mix (at 1.7 times its rate, so its arrivals are
// not those of a default run) through the bench's own server, as `bench serve` runs it, against
// its simulation on the same schedule: the difference of the median steps (decodes, nearly all)
// is added to every step, and the ratio of the mean steps, less it, scales the backend's terms.

#include "bench/household/schedule.hpp"
#include "cli/cmd_bench_household.hpp"
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
  double calibrate_s = 30;  //!< arrivals of the calibration run
};

// The profile calibrated on a real run and its simulation on the same schedule.
result<sim::step_profile> calibrated(const bench_profile_args& a, const model_file& m,
                                     const sim::step_profile& p) {
  household_args h;
  h.model = a.model;
  h.compute = a.compute;
  h.duration_s = a.calibrate_s;
  h.drain_s = 60;
  h.no_progress = true;
  auto w = load_household_workload(h);
  if (!w) return w.error();
  household_model real{m, nullptr};
  if (auto st = real.load_backend(h); !st) return st.error();
  household::schedule_builder builder(*w, real.tok(), real.n_ctx());
  auto s = builder.generate(1.7, w->duration_s);
  if (!s) return s.error();
  const engine_config cfg = household_engine(h);
  auto measured = run_household(h, cfg, *w, real, *s, {}, nullptr);
  if (!measured) return measured.error();
  household_model simulated{m, nullptr, p};
  auto predicted = run_household(h, cfg, *w, simulated, *s, {}, nullptr);
  if (!predicted) return predicted.error();
  const auto &got = measured->server.step_ms, &want = predicted->server.step_ms;
  const double added = std::max(0.0, got.p50 - want.p50);
  const double backend = want.mean - p.overhead_ms;
  const double scale = backend > 0 ? std::max(0.5, (got.mean - p.overhead_ms - added) / backend) : 1.0;
  std::printf(
      "hearth bench profile: calibration on %zu requests: steps measured %.2f ms median, %.2f mean; "
      "simulated %.2f, %.2f: %.2f ms added per step, backend times %.3f x\n",
      s->requests.size(), got.p50, got.mean, want.p50, want.mean, added, scale);
  sim::step_profile c = p.scaled(1 / scale, 1 / scale);
  c.overhead_ms += added;
  return c;
}

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
  if (a.calibrate_s > 0) {
    auto c = calibrated(a, *m, *p);
    if (!c) return fail(c.error().message);
    *p = std::move(*c);
  }
  std::printf(
      "hearth bench profile: %zu steps measured on %s, %u threads, %s; fit within %.1f %% (rms); "
      "serving overhead %.3f ms per step\n",
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
  cmd->add_option(
         "--calibrate", a->calibrate_s,
         "Seconds of household arrivals that calibrate the serving overhead (0: the engine's own only)")
      ->capture_default_str();
  add_compute_options(cmd, a->compute);
  cmd->callback([a, &exit_code] { exit_code = run_bench_profile(*a); });
}

}  // namespace hearth::cli
