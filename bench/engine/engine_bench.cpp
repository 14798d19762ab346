#include "bench/engine/engine_bench.hpp"

#include <chrono>
#include <vector>

#include "actors/engine.hpp"
#include "actors/event_queue.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/null_backend.hpp"
#include "model/file_hash.hpp"
#include "model/model_file.hpp"

namespace hearth {

namespace {

// The workload: opt.seqs requests of opt.prompt tokens, each generating exactly opt.gen
// (ignore_eos: end-of-generation tokens are never drawn, on the null backend or a real model).
// `remote`: through the worker at opt.worker, joined with it (make is then not called).
result<engine_run> run_once(const engine_bench_options& opt, std::shared_ptr<const tokenizer> tok,
                            token_id filler, backend_factory make, const join_hello* remote = nullptr) {
  engine_config cfg{.max_batched_tokens = std::max(opt.seqs, 256u),
                    .max_seqs = opt.seqs,
                    .long_prefill_threshold = 256,
                    .max_partial_prefills = opt.seqs,
                    .threads_per_worker = opt.threads};
  if (remote) {
    auto at = parse_worker_endpoint(opt.worker);
    if (!at) return at.error();
    at->credentials = opt.worker_credentials;
    cfg.workers = {*at};
  }
  auto e = engine::start(cfg, std::move(tok), std::move(make), {}, {}, remote ? *remote : join_hello{});
  if (!e) return e.error();
  event_queue events(**e);
  request r;
  r.tenant = "bench";
  r.prompt.assign(opt.prompt, filler);
  r.max_tokens = opt.gen;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  r.share_prefix = false;  // every request computes its own prompt, as distinct prompts would
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < opt.seqs; ++i) (*e)->submit(r, events.sink());
  uint32_t ended = 0;
  std::string failure;
  while (ended < opt.seqs) {
    auto ev = events.next(std::chrono::minutes(10));
    if (!ev) return error{errc::io, "engine bench: no event for 10 minutes"};
    if (!ev->terminal()) continue;
    ++ended;
    if (ev->kind != event_kind::done) failure = std::string(to_string(ev->reason)) + ": " + ev->message;
  }
  if (!failure.empty()) return error{errc::invalid_argument, "engine bench: a request failed: " + failure};
  engine_run run;
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto gauges = (*e)->gauges();
  if (!gauges) return gauges.error();
  const scheduler_gauges& g = *gauges;
  run.steps = g.steps;
  run.compute_ms_per_step = g.compute_ms / static_cast<double>(g.steps);
  run.overhead_ms_per_step = g.overhead_ms / static_cast<double>(g.steps);
  return run;
}

}  // namespace

result<engine_bench_report> run_engine_bench(const engine_bench_options& opt) {
  auto m = open_model_file(opt.model_path);
  if (!m) return m.error();
  const hparams& hp = m->hp;
  const auto ids = m->tok->encode(" the", {.add_bos = false, .parse_special = false});
  if (ids.empty()) return error{errc::invalid_argument, "engine bench: the vocabulary cannot encode ' the'"};
  const token_id filler = ids.back();
  const uint32_t block = 16;
  const uint64_t tokens = uint64_t{opt.seqs} * (opt.prompt + opt.gen + block);
  if (opt.prompt + opt.gen > hp.n_ctx_train)
    return error{errc::invalid_argument, "engine bench: prompt + gen exceeds the context"};

  engine_bench_report r;
  r.opt = opt;
  auto null_run = run_once(opt, m->tok, filler, [&]() -> result<std::unique_ptr<backend>> {
    auto b = null_backend::create(hp, static_cast<uint32_t>((tokens + block - 1) / block), block, filler);
    if (!b) return b.error();
    return std::unique_ptr<backend>(std::move(*b));
  });
  if (!null_run) return null_run.error();
  r.null_run = *null_run;
  if (!opt.real_run) return r;
  auto model = cpu_backend::factory(
      m->gguf, {.compute = opt.compute, .block_size = block, .kv_tokens = tokens, .kernels = opt.kernels});
  auto real_run = run_once(opt, m->tok, filler, model);
  if (!real_run) return real_run.error();
  r.real_run = *real_run;
  if (!opt.worker.empty()) {
    auto sha = file_sha256(opt.model_path);
    if (!sha) return sha.error();
    const join_hello hello = local_hello(opt.model_path, *sha);
    auto remote_run = run_once(opt, m->tok, filler, model, &hello);
    if (!remote_run) return remote_run.error();
    r.remote_run = *remote_run;
  }
  r.overhead_share =
      r.null_run.overhead_ms_per_step / (r.real_run.compute_ms_per_step + r.real_run.overhead_ms_per_step);
  return r;
}

void print_engine_bench(const engine_bench_report& r, std::FILE* out) {
  std::fprintf(out, "engine bench: %u requests together, prompt %u, %u tokens each (%s)\n", r.opt.seqs,
               r.opt.prompt, r.opt.gen, r.opt.model_path.c_str());
  std::fprintf(out, "%-14s %8s %10s %16s %17s\n", "backend", "steps", "wall s", "compute ms/step",
               "overhead ms/step");
  std::vector<std::pair<const char*, engine_run>> runs = {{"null", r.null_run}, {"model", r.real_run}};
  if (r.remote_run) runs.emplace_back("model, remote", *r.remote_run);
  for (const auto& [name, run] : runs) {
    std::fprintf(out, "%-14s %8llu %10.2f %16.3f %17.3f\n", name, static_cast<unsigned long long>(run.steps),
                 run.wall_s, run.compute_ms_per_step, run.overhead_ms_per_step);
  }
  std::fprintf(out,
               "runtime overhead per step: %.3f ms = %.2f %% of the real step (%.2f ms); target < 2 %%\n",
               r.null_run.overhead_ms_per_step, 100.0 * r.overhead_share,
               r.real_run.compute_ms_per_step + r.real_run.overhead_ms_per_step);
  if (r.remote_run)
    std::fprintf(out, "the worker in another process adds %.3f ms per step (%s)\n",
                 r.remote_run->overhead_ms_per_step - r.real_run.overhead_ms_per_step, r.opt.worker.c_str());
}

}  // namespace hearth
