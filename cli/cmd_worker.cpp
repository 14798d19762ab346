// hearth worker: a worker for a server on another machine (actors/worker_node.hpp), until SIGINT
// or SIGTERM. It loads the model, listens, and runs the steps of the server that joins it.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <utility>

#include "actors/worker_node.hpp"
#include "cli/backend_choice.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "model/file_hash.hpp"
#include "model/model_file.hpp"
#include "server/service_log.hpp"

namespace hearth::cli {
namespace {

struct worker_args {
  std::string listen, model, cpus, compute = "bf16", kernels = "auto", credentials, backend = "cpu";
  unsigned threads = 0;
  uint32_t device = 0;
  uint64_t kv_tokens = 16384;  // as [engine] kv_tokens
};

void worker_log(const std::string& line) {
  server::log(server::log_level::info, "worker: " + line);
}

// The one line once it listens: what it loaded, where, and the build a server must match.
std::string ready_line(const worker_args& a, const std::string& sha, double hash_s, const worker_node& node,
                       worker_endpoint bound) {
  const worker_info& w = node.info();
  char hashed[32];
  std::snprintf(hashed, sizeof hashed, "%.2f", hash_s);
  bound.port = node.port();
  std::string line = a.model + " (sha256 " + sha.substr(0, 12) + "..., hashed in " + hashed + " s; ";
  line += std::to_string(w.n_blocks) + " KV blocks of " + std::to_string(w.block_size) + ", ";
  line += std::to_string(w.threads) + " threads, on " + w.device + ") listening on " + bound.text() +
          (a.credentials.empty() ? " (plain TCP)" : " (TLS)") + ", build " + build_version();
  return line;
}

int run_worker(const worker_args& a) {
  // Blocked before any thread starts, so sigwait below is the one place they arrive.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto listen = parse_worker_endpoint(a.listen, true);
  if (!listen) return fail("--listen " + listen.error().message);
  listen->credentials = a.credentials;
  // Before the model is read: a port open to anyone is refused at once.
  if (auto st = listen->check_reach(); !st) return fail(st.error().message);
  auto model = open_model_file(a.model);
  if (!model) return fail(model.error().message);
  const auto hashing = std::chrono::steady_clock::now();
  auto sha = file_sha256(a.model);
  if (!sha) return fail(sha.error().message);
  const double hash_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - hashing).count();
  auto loading = std::make_shared<progress_line>("loading " + a.model);
  auto factory =
      backend_named({.name = a.backend,
                     .compute = a.compute == "f32" ? compute_type::f32 : compute_type::bf16,
                     .kv_tokens = a.kv_tokens,
                     .kernels = a.kernels,
                     .device = a.device,
                     .progress = [loading](uint64_t done, uint64_t total) { loading->update(done, total); }},
                    model->gguf, "--backend");
  if (!factory) return fail(factory.error().message);
  auto node = worker_node::start({.listen = *listen,
                                  .cpus = a.cpus,
                                  .threads = a.threads,
                                  .make_backend = std::move(*factory),
                                  .hello = local_hello(a.model, *sha),
                                  .log = worker_log});
  loading->finish();
  if (!node) return fail(node.error().message);
  std::printf("hearth worker: %s\n", ready_line(a, *sha, hash_s, **node, *listen).c_str());
  std::fflush(stdout);
  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  worker_log("stopping");
  node->reset();
  return 0;
}

}  // namespace

void add_worker_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("worker", "Run a worker for a server on another machine until SIGINT/SIGTERM");
  auto a = std::make_shared<worker_args>();
  cmd->add_option("--listen", a->listen,
                  "tcp://HOST:PORT to listen on (HOST * = every address, PORT 0 = free)")
      ->required();
  cmd->add_option("-m,--model", a->model, "GGUF model file: the very file the server opens")->required();
  cmd->add_option("--credentials", a->credentials,
                  "hearth keygen --worker's folder: TLS, each end proven (needed off loopback)");
  cmd->add_option("--backend", a->backend,
                  "What its steps compute on: cpu, or cuda (a build with the CUDA backend)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--device", a->device, "The CUDA device's ordinal (--backend cuda)");
  cmd->add_option("--cpus", a->cpus, "cpuset to pin to, hwloc list syntax (0-3,8); default: not pinned");
  cmd->add_option("--threads", a->threads, "Kernel threads (0: one per cpu of its set)");
  cmd->add_option("--compute", a->compute, "Matrix compute type")->check(CLI::IsMember({"bf16", "f32"}));
  cmd->add_option("--kernels", a->kernels, "Matmul paths to measure and choose among: auto, onednn, hearth")
      ->check(CLI::IsMember({"auto", "onednn", "hearth"}));
  cmd->add_option("--kv-tokens", a->kv_tokens, "KV pool capacity in positions")
      ->check(CLI::Range(16, 1 << 30));
  cmd->callback([a, &exit_code] { exit_code = run_worker(*a); });
}

}  // namespace hearth::cli
