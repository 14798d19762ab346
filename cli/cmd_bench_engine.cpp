// hearth bench engine: the runtime's own cost per step against the real step time, in one run
// (bench/engine_bench.hpp); a table on stdout, the figures as JSON with --json.

#include <nlohmann/json.hpp>

#include "bench/engine/engine_bench.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "common/text_file.hpp"

namespace hearth::cli {
namespace {

struct bench_engine_args {
  std::string model;
  std::string json_path;
  compute_args compute;
  engine_bench_options opt;
};

nlohmann::json to_json(const engine_run& r) {
  return {{"steps", r.steps},
          {"wall_s", r.wall_s},
          {"compute_ms_per_step", r.compute_ms_per_step},
          {"overhead_ms_per_step", r.overhead_ms_per_step}};
}

int run_bench_engine(bench_engine_args& a) {
  a.opt.model_path = a.model;
  a.opt.compute = apply_compute_args(a.compute);
  a.opt.kernels = kernels_of(a.compute);
  if (a.compute.threads > 0) a.opt.threads = static_cast<unsigned>(a.compute.threads);
  auto r = run_engine_bench(a.opt);
  if (!r) return fail(r.error().message);
  print_engine_bench(*r, stdout);
  if (a.json_path.empty()) return 0;
  nlohmann::json j = {{"model", a.model},
                      {"seqs", a.opt.seqs},
                      {"prompt", a.opt.prompt},
                      {"gen", a.opt.gen},
                      {"null", to_json(r->null_run)},
                      {"model_run", to_json(r->real_run)},
                      {"overhead_share", r->overhead_share}};
  if (r->remote_run) j["remote_run"] = to_json(*r->remote_run);
  if (auto st = write_text_file(a.json_path, j.dump(2) + '\n'); !st) return fail(st.error().message);
  return 0;
}

}  // namespace

void add_bench_engine_command(CLI::App& bench, int& exit_code) {
  auto* cmd =
      bench.add_subcommand("engine", "The runtime's own cost per step (null backend) against the real step");
  auto a = std::make_shared<bench_engine_args>();
  cmd->add_option("-m,--model", a->model, "GGUF model file")->required();
  cmd->add_option("--json", a->json_path, "Write the figures to this file");
  cmd->add_option("--seqs", a->opt.seqs, "Requests running together")->capture_default_str();
  cmd->add_option("--prompt", a->opt.prompt, "Prompt tokens per request")->capture_default_str();
  cmd->add_option("--gen", a->opt.gen, "Tokens each request generates")->capture_default_str();
  cmd->add_option("--worker", a->opt.worker,
                  "tcp://HOST:PORT of a `hearth worker` on the same model: the model's run again through it");
  cmd->add_option("--worker-credentials", a->opt.worker_credentials,
                  "keygen --worker's folder: the worker over TLS (as its --credentials)");
  add_compute_options(cmd, a->compute);
  cmd->callback([a, &exit_code] { exit_code = run_bench_engine(*a); });
}

}  // namespace hearth::cli
