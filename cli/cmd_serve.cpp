// hearth serve: the engine behind the wire protocol's gateway, until SIGINT or SIGTERM.
// Configuration: the file (--config; docs/configuration.md), then the flags. Without either it
// serves the default model (models/tiny.gguf, written if missing) in development mode on
// tcp://127.0.0.1:5555. SIGHUP (and the protocol's admin `reload`) re-reads the file's policy
// and tenants; a bad file leaves the running configuration as it was.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "actors/engine.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "clients/cpp/keys.hpp"
#include "kernels/cpu_backend.hpp"
#include "model/chat_template.hpp"
#include "model/gguf.hpp"
#include "model/hparams.hpp"
#include "model/model_maker.hpp"
#include "policies/policy.hpp"
#include "server/gateway.hpp"
#include "server/serve_config.hpp"

namespace hearth::cli {
namespace {

constexpr const char* default_model = "models/tiny.gguf";
constexpr auto shutdown_grace = std::chrono::seconds(5);

struct serve_args {
  std::string config, model, endpoint, policy, key_file, compute, kernels;
  int threads = -1;
};

void log_line(const std::string& line) {
  std::fprintf(stderr, "hearth: %s\n", line.c_str());
  std::fflush(stderr);
}

// The default model, generated as scripts/quickstart.sh does when it is missing.
status<> ensure_default_model() {
  if (std::filesystem::exists(default_model)) return {};
  log_line(std::string("writing the default model ") + default_model + " (preset tiny)");
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(default_model).parent_path(), ec);
  return make_model({.preset = *find_preset("tiny"), .dtype = tensor_type::f32, .seed = 1}, default_model);
}

result<server::serve_config> configure(const serve_args& a) {
  server::serve_config c;
  if (!a.config.empty()) {
    auto loaded = server::load_serve_config(a.config);
    if (!loaded) return loaded.error();
    c = std::move(*loaded);
  }
  if (!a.model.empty()) c.model_path = a.model;
  if (!a.endpoint.empty()) c.endpoint = a.endpoint;
  if (!a.policy.empty()) c.engine.policy = a.policy;
  if (!a.key_file.empty()) c.secret_key_file = a.key_file;
  if (!a.compute.empty()) c.compute = a.compute;
  if (!a.kernels.empty()) c.kernels = a.kernels;
  if (a.threads >= 0) c.engine.threads_per_worker = static_cast<uint32_t>(a.threads);
  if (auto st = server::check_tenant_keys(c); !st) return st.error();
  if (c.model_path.empty()) {
    if (auto st = ensure_default_model(); !st) return st.error();
    c.model_path = default_model;
  }
  return c;
}

// SIGHUP and admin `reload`: the file's policy (unless --policy fixed it) and tenants. A reload
// that changes nothing is fine; one that would leave a CURVE server with no tenant is refused
// (every client would be shut out), and each one says what it changed.
class reloader {
 public:
  reloader(const serve_args& a, const server::serve_config& running)
      : args_(a),
        curve_(!running.development_mode()),
        secret_key_file_(running.secret_key_file),
        tenants_(running.engine.tenants),
        policy_(running.engine.policy) {}

  result<server::gateway_config> operator()(engine& eng) {
    std::lock_guard lock(m_);
    if (args_.config.empty()) return error{errc::invalid_argument, "no configuration file (--config) to reload"};
    auto c = server::load_serve_config(args_.config);
    if (!c) return c.error();
    c->secret_key_file = secret_key_file_;  // the mode is fixed at start
    if (auto st = server::check_tenant_keys(*c); !st) return st.error();
    if (curve_ && c->engine.tenants.empty())
      return error{errc::invalid_argument,
                   args_.config + " lists no tenant: a CURVE server would accept no client"};
    const std::string policy = args_.policy.empty() ? c->engine.policy : args_.policy;
    // The policy name is checked before the tenants change, so a bad file changes nothing.
    if (auto names = policy_names(); std::find(names.begin(), names.end(), policy) == names.end()) {
      return error{errc::invalid_argument, "unknown policy '" + policy + "'"};
    }
    if (auto st = eng.set_tenants(c->engine.tenants); !st) return st.error();
    if (auto st = eng.set_policy(policy); !st) return st.error();
    log_line("reloaded " + args_.config + ": " +
             server::describe_reload(tenants_, c->engine.tenants, policy_, policy));
    tenants_ = c->engine.tenants;
    policy_ = policy;
    return server::gateway_config{std::move(c->engine.tenants), policy};
  }

 private:
  const serve_args& args_;
  const bool curve_;
  const std::string secret_key_file_;
  std::vector<tenant_config> tenants_;  // as running
  std::string policy_;
  std::mutex m_;
};

int run_serve(const serve_args& a) {
  // Blocked before any thread starts, so every thread inherits the mask and sigwait below is the
  // one place the signals arrive.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto cfg = configure(a);
  if (!cfg) return fail(cfg.error().message);
  std::string secret;
  if (!cfg->development_mode()) {
    auto keys = client::read_key_file(cfg->secret_key_file);
    if (!keys) return fail(keys.error().message);
    secret = keys->secret_key;
  }
  auto file = gguf::file::open(cfg->model_path);
  if (!file) return fail(file.error().to_error().message);
  auto shared_file = std::make_shared<gguf::file>(std::move(*file));
  auto tok = tokenizer::from_gguf(*shared_file);
  if (!tok) return fail(tok.error().message);
  auto hp = read_hparams(*shared_file);
  if (!hp) return fail(hp.error().message);
  const compute_type ct = cfg->compute == "f32" ? compute_type::f32 : compute_type::bf16;
  const cpu_backend_options backend_opt{
      .compute = ct,
      .kv = kv_dtype_for(ct),
      .kv_tokens = cfg->kv_tokens,
      .kernels = kernel_choice_from_name(cfg->kernels).value_or(kernel_choice::automatic)};
  auto shared_tok = std::make_shared<const tokenizer>(std::move(*tok));
  auto eng = engine::start(cfg->engine, shared_tok, [shared_file, backend_opt]() -> result<std::unique_ptr<backend>> {
    auto b = cpu_backend::load(*shared_file, backend_opt);
    if (!b) return b.error();
    return std::unique_ptr<backend>(std::move(*b));
  });
  if (!eng) return fail(eng.error().message);

  reloader reload(a, *cfg);
  std::unique_ptr<server::gateway> gw;
  server::gateway_options opt{
      .endpoint = cfg->endpoint,
      .secret_key = secret,
      .max_message_bytes = cfg->max_message_bytes,
      .heartbeat_ms = cfg->heartbeat_ms,
      .tenants = cfg->engine.tenants,
      .model = {std::filesystem::path(cfg->model_path).stem().string(), to_string(hp->arch),
                chat_format_name(shared_tok->spec().chat_template), hp->n_ctx_train, hp->n_vocab},
      .policy = cfg->engine.policy,
      .reload = [&] { return reload(**eng); },
      .log = log_line};
  auto started = server::gateway::start(**eng, std::move(opt));
  if (!started) return fail(started.error().message);
  gw = std::move(*started);

  std::printf("hearth serve: %s (%s, context %u, policy %s) on %s\n", cfg->model_path.c_str(), to_string(hp->arch),
              hp->n_ctx_train, cfg->engine.policy.c_str(), gw->endpoint().c_str());
  if (cfg->development_mode()) {
    std::printf("hearth serve: development mode (no server key): loopback only, clients name their tenant\n");
    std::printf("hearth serve: chat with it: hearth chat --endpoint %s\n", gw->endpoint().c_str());
  } else {
    std::printf("hearth serve: server public key %s\n", gw->public_key().c_str());
  }
  std::fflush(stdout);

  // The engine's failure ends the process, non-zero, for its service manager to start it
  // afresh (docs/operations.md): the listener wakes the signal loop with a signal of its set.
  std::atomic<bool> engine_failed{false};
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(shutdown_grace);
  (*eng)->on_failure([&engine_failed, main_thread = pthread_self()](const std::string& why) {
    log_line("the engine failed: " + why);
    engine_failed = true;
    pthread_kill(main_thread, SIGTERM);
  });
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig != SIGHUP) break;
    if (auto r = reload(**eng); !r)
      log_line("reload refused: " + r.error().message);
    else
      gw->reconfigure(std::move(*r));
  }
  if (engine_failed) {
    // Every request has its `internal` error (the gateway ended them); a hung worker thread
    // would never let the engine be destroyed, so the process ends without trying.
    gw->stop(grace);
    gw.reset();
    log_line("exiting after the engine's failure");
    std::fflush(stdout);
    std::_Exit(1);
  }
  log_line("stopping: ending the requests in flight");
  gw->drain();
  (*eng)->shutdown();
  gw->stop(grace);
  // Until the socket closes, latecomers are told `shutting_down`.
  eng->reset();
  gw.reset();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("serve", "Serve a model over the wire protocol (ZeroMQ) until SIGINT/SIGTERM");
  auto a = std::make_shared<serve_args>();
  cmd->add_option("-c,--config", a->config, "TOML configuration file ([server], [model], [engine], [[tenant]])");
  cmd->add_option("-m,--model", a->model, "GGUF model file (default: models/tiny.gguf, written if missing)");
  cmd->add_option("-e,--endpoint", a->endpoint, "ZeroMQ endpoint to bind (default tcp://127.0.0.1:5555)");
  cmd->add_option("--policy", a->policy, "Scheduling policy: fcfs, priority, vtc, slo, household");
  cmd->add_option("--key", a->key_file, "Server key file from `hearth keygen` (turns CURVE on)");
  cmd->add_option("--compute", a->compute, "Matrix compute type")->check(CLI::IsMember({"bf16", "f32"}));
  cmd->add_option("--kernels", a->kernels, "Matmul paths to measure and choose among: auto, onednn, hearth")
      ->check(CLI::IsMember({"auto", "onednn", "hearth"}));
  cmd->add_option("--threads", a->threads, "Kernel threads per worker (0: one per cpu of its set)");
  cmd->callback([a, &exit_code] { exit_code = run_serve(*a); });
}

}  // namespace hearth::cli
