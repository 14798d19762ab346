// hearth bench profile: the step-time model the simulator runs on (sim/step_profile.hpp),
// measured on this machine's backend for one model, thread count and compute type. Its overhead
// and scale are what serving costs beyond the backend's time alone: the runtime's messages, and
// the gateway's and the client's threads on the same cores, which slow the compute too. Both are
// calibrated on two short runs of the household mix through the bench's own server, as `bench
// serve` runs it: at 1.7 times its rate (so its arrivals are not those of a default run), and at
// half its rate for twice as long, where most requests arrive at an idle server. The steps they run, each
// shape with its round trip and the idle time before it, refit the overhead, scale each group of terms and
// set what a step after idle time adds (sim::calibrated); their requests' TTFT beyond the server's
// split of it is the request's way in and out (sim::with_request_path). hearth bench calibrate
// does the same on what real runs served (bench serve --served-out), so that a profile follows
// the minutes those runs came in.

#include <algorithm>
#include <functional>
#include <iterator>

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

// The median of measured / predicted over the served steps of each kind: how far the profile is
// from what serving runs, where it matters (a stream's gaps are decodes, a first token waits on
// prompt chunks).
std::string agreement(const sim::step_profile& p, const std::vector<sim::profile_point>& steps) {
  struct kind {
    const char* name;
    std::function<bool(const sim::profile_point&)> holds;
  };
  const kind kinds[] = {
      {"decodes of 1", [](const auto& s) { return s.prefill_kpairs == 0 && s.seqs == 1; }},
      {"2-4", [](const auto& s) { return s.prefill_kpairs == 0 && s.seqs >= 2 && s.seqs <= 4; }},
      {"5+", [](const auto& s) { return s.prefill_kpairs == 0 && s.seqs >= 5; }},
      {"steps with a prompt", [](const auto& s) { return s.prefill_kpairs > 0; }},
      {"after idle", [&p](const auto& s) { return s.idle_ms >= p.idle_gap_ms; }}};
  std::string out;
  for (const kind& k : kinds) {
    std::vector<double> ratio;
    for (const auto& s : steps)
      if (k.holds(s)) ratio.push_back(s.ms / p.predict_ms(s));
    if (ratio.empty()) continue;
    std::nth_element(ratio.begin(), ratio.begin() + static_cast<std::ptrdiff_t>(ratio.size() / 2),
                     ratio.end());
    char line[96];
    std::snprintf(line, sizeof line, "%s%s %.2f (%zu)", out.empty() ? "" : ", ", k.name,
                  ratio[ratio.size() / 2], ratio.size());
    out += line;
  }
  return out;
}

result<sim::served_log> serve_mix(const bench_profile_args& a, const model_file& m, double rate,
                                  double duration_s) {
  household_args h;
  h.model = a.model;
  h.compute = a.compute;
  h.duration_s = duration_s;
  h.drain_s = 60;
  h.no_progress = true;
  auto w = load_household_workload(h);
  if (!w) return w.error();
  household_model real{m, nullptr};
  if (auto st = real.load_backend(h); !st) return st.error();
  household::schedule_builder builder(*w, real.tok(), real.n_ctx());
  auto s = builder.generate(rate, w->duration_s);
  if (!s) return s.error();
  served_recorder served;
  auto measured = run_household(h, household_engine(h), *w, real, *s, {.step_end = served.hook()});
  if (!measured) return measured.error();
  served.add_requests(*measured);
  return served.take();
}

// p calibrated on what was served (sim::calibrated, sim::with_request_path), said with how far p
// and the calibrated profile are from the steps.
result<sim::step_profile> calibrate_on(const char* command, const sim::step_profile& p,
                                       const sim::served_log& served) {
  auto c = sim::calibrated(p, served.steps);
  if (!c) return c.error();
  *c = sim::with_request_path(std::move(*c), served.requests);
  auto times = [](double now, double was) { return was != 0 ? now / was : 1.0; };
  std::printf(
      "hearth bench %s: calibrated on %zu steps: %+.2f ms a step, %+.2f ms after idle time; the "
      "tokens' terms %.2f x, the sequences' %.2f x, decode attention %.2f x, prompt attention %.2f x; "
      "a request's way in and out %.2f ms + %.4f ms a prompt token (%zu requests)\n"
      "  measured / predicted, median: profiled alone: %s\n"
      "                                calibrated:     %s\n",
      command, served.steps.size(), c->overhead_ms + c->base_ms - p.overhead_ms - p.base_ms, c->after_idle_ms,
      times(c->per_token_ms, p.per_token_ms), times(c->per_seq_ms, p.per_seq_ms),
      times(c->per_decode_kpair_ms, p.per_decode_kpair_ms),
      times(c->per_prefill_kpair_ms, p.per_prefill_kpair_ms), c->path_ms, c->path_per_token_ms,
      served.requests.size(), agreement(p, served.steps).c_str(), agreement(*c, served.steps).c_str());
  return c;
}

// The profile calibrated on the steps of two real runs of the household mix.
result<sim::step_profile> calibrated(const bench_profile_args& a, const model_file& m,
                                     const sim::step_profile& p) {
  auto fast = serve_mix(a, m, 1.7, a.calibrate_s);
  if (!fast) return fast.error();
  // Of the slow run (twice as long: its steps after idle time are about its requests, a dozen in
  // 30 s) only those: its other steps, mostly one decode at a time, scaled every term as if all
  // loads ran so, and the simulator came out 10-17 % slow at 2.5 x the rate.
  auto slow = serve_mix(a, m, 0.5, 2 * a.calibrate_s);
  if (!slow) return slow.error();
  std::ranges::copy_if(slow->steps, std::back_inserter(fast->steps),
                       [&p](const sim::profile_point& s) { return s.idle_ms >= p.idle_gap_ms; });
  std::ranges::copy(slow->requests, std::back_inserter(fast->requests));
  return calibrate_on("profile", p, *fast);
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
  std::string again;  // the shapes a stall slowed, measured again
  auto p = sim::measure_profile(
      **be, ids.empty() ? 0 : ids.back(),
      {.repeats = a.quick ? 2u : 5u,
       .progress = [&](size_t done, size_t total) { measuring.update(done, total); },
       .measured_again =
           [&](const sim::profile_point& s, double first_ms, double again_ms) {
             char line[160];
             std::snprintf(line, sizeof line, "  %u tokens in %u sequence%s: %.2f ms, then %.2f ms\n",
                           s.tokens, s.seqs, s.seqs == 1 ? "" : "s", first_ms, again_ms);
             again += line;
           }});
  measuring.finish();
  if (!p) return fail(p.error().message);
  if (!again.empty()) std::printf("measured again, more than 25 %% slower than the fit:\n%s", again.c_str());
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

struct bench_calibrate_args {
  std::string profile;
  std::vector<std::string> served;
  std::string out;
};

int run_bench_calibrate(const bench_calibrate_args& a) {
  auto p = sim::load_profile(a.profile);
  if (!p) return fail(p.error().message);
  sim::served_log all;
  for (const std::string& path : a.served) {
    auto log = sim::load_served(path);
    if (!log) return fail(log.error().message);
    std::ranges::copy(log->steps, std::back_inserter(all.steps));
    std::ranges::copy(log->requests, std::back_inserter(all.requests));
  }
  auto c = calibrate_on("calibrate", *p, all);
  if (!c) return fail(a.profile + ": " + c.error().message);
  if (auto st = write_text_file(a.out, sim::to_json(*c)); !st) return fail(st.error().message);
  return 0;
}

}  // namespace

void add_bench_calibrate_command(CLI::App& bench, int& exit_code) {
  auto* cmd = bench.add_subcommand(
      "calibrate", "Calibrate a step profile on what a real server served (bench serve --served-out)");
  auto a = std::make_shared<bench_calibrate_args>();
  cmd->add_option("--profile", a->profile, "The profile to start from (bench profile --calibrate 0)")
      ->required();
  cmd->add_option("--served", a->served, "What bench serve --served-out wrote; repeat for several runs")
      ->required();
  cmd->add_option("-o,--out", a->out, "The calibrated profile's JSON file")->required();
  cmd->callback([a, &exit_code] { exit_code = run_bench_calibrate(*a); });
}

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
