#include "cli/cmd_bench_household.hpp"

#include "kernels/cpu_backend.hpp"
#include "model/gguf.hpp"

namespace hearth::cli {

void add_household_options(CLI::App* cmd, household_args& a) {
  cmd->add_option("-m,--model", a.model, "GGUF model file (the bench starts its own engines on it)")
      ->required();
  cmd->add_option("--workload", a.workload, "Workload TOML (default: the shipped household mix)");
  cmd->add_option("--duration", a.duration_s, "Seconds of arrivals (default: the workload's)");
  cmd->add_option("--drain", a.drain_s, "Seconds the last requests get to end (default: the workload's)");
  cmd->add_option("--kv-tokens", a.kv_tokens, "KV pool capacity in positions")->capture_default_str();
  engine_config& e = a.engine;
  cmd->add_option("--max-partial-prefills", e.max_partial_prefills, "Prompts mid-prefill at once")
      ->capture_default_str();
  cmd->add_option("--max-waiting", e.max_waiting, "Requests queued before queue_full")->capture_default_str();
  cmd->add_option("--worker-cpus", e.worker_cpus, "Cpuset of the (prefill) worker, hwloc list syntax");
  cmd->add_option("--decode-cpus", e.decode_cpus, "Disaggregated: the decode worker's cpuset");
  add_compute_options(cmd, a.compute);
  cmd->add_flag("--no-progress", a.no_progress, "No progress bar");
}

backend_factory household_model::factory() const {
  return [p = prototype]() -> result<std::unique_ptr<backend>> { return p->share(); };
}

result<household::workload> load_household_workload(const household_args& a) {
  auto w = a.workload.empty()
               ? household::parse_workload(household::default_workload_text(), "household.toml")
               : household::load_workload(a.workload);
  if (!w) return w.error();
  if (a.duration_s > 0) w->duration_s = a.duration_s;
  if (a.drain_s >= 0) w->drain_s = a.drain_s;
  return w;
}

result<household_model> load_household_model(const household_args& a) {
  auto f = gguf::file::open(a.model);
  if (!f) return f.error().to_error();
  auto tok = tokenizer::from_gguf(*f);
  if (!tok) return tok.error();
  const compute_type ct = apply_compute_args(a.compute);
  auto be = cpu_backend::load(
      *f, {.compute = ct, .kv = kv_dtype_for(ct), .block_size = 16, .kv_tokens = a.kv_tokens});
  if (!be) return be.error();
  household_model m;
  m.tok = std::make_shared<const tokenizer>(std::move(*tok));
  m.n_ctx = (*be)->params().n_ctx_train;
  m.prototype = std::shared_ptr<backend>(std::move(*be));
  return m;
}

engine_config household_engine(const household_args& a) {
  engine_config c = a.engine;
  c.mode = a.mode == "disaggregated" ? placement_mode::disaggregated : placement_mode::colocated;
  c.threads_per_worker = a.compute.threads > 0 ? static_cast<uint32_t>(a.compute.threads) : 0;
  return c;
}

nlohmann::json household_config_json(const household_args& a, const household::workload& w) {
  return {{"model", a.model},
          {"target", "in-process engine"},
          {"workload_file", a.workload.empty() ? "(built in)" : a.workload},
          {"workload", household::to_json(w)},
          {"kv_tokens", a.kv_tokens},
          {"compute", a.compute.compute},
          {"threads", a.compute.threads}};
}

}  // namespace hearth::cli
