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
#include <span>
#include <vector>

#include "actors/engine.hpp"
#include "cli/backend_choice.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "cli/progress.hpp"
#include "clients/cpp/keys.hpp"
#include "kernels/kernel_tuner.hpp"
#include "model/chat_template.hpp"
#include "model/chat_tools.hpp"
#include "model/file_hash.hpp"
#include "model/model_file.hpp"
#include "model/model_maker.hpp"
#include "policies/policy.hpp"
#include "server/endpoint.hpp"
#include "server/gateway.hpp"
#include "server/http/gateway.hpp"
#include "server/serve_config.hpp"
#include "server/service_log.hpp"
#include "server/service_manager.hpp"

namespace hearth::cli {
namespace {

constexpr const char* default_model = "models/tiny.gguf";
constexpr auto shutdown_grace = std::chrono::seconds(5);

// "worker tcp://a:1" or "workers tcp://a:1, tcp://b:2".
std::string worker_list(const std::vector<worker_endpoint>& workers) {
  std::string out = workers.size() == 1 ? "worker " : "workers ";
  for (size_t i = 0; i < workers.size(); ++i) out += (i ? ", " : "") + workers[i].text();
  return out;
}
// From SIGTERM to exit beyond the drain: each gateway's grace for its last messages, and one
// more for the engine to stop; what the service manager is told to wait for on top of the drain.
constexpr auto stop_after_drain = 3 * shutdown_grace;

struct serve_args {
  std::string config, model, endpoint, http, policy, key_file, compute, kernels;
  int threads = -1;
};

void log_line(const std::string& line) {
  server::log(server::log_level::info, line);
}

// The default model, generated as scripts/quickstart.sh does when it is missing.
status<> ensure_default_model() {
  if (std::filesystem::exists(default_model)) return {};
  log_line(std::string("writing the default model ") + default_model + " (preset tiny)");
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(default_model).parent_path(), ec);
  return make_model({.preset = *find_preset("tiny"), .dtype = tensor_type::f32, .seed = 1}, default_model);
}

// The prefill (or only) worker's backend, and the decode worker's when it is another kind than
// the prefill worker's (disaggregated mode: prefill_backend, decode_backend); empty otherwise.
result<std::pair<backend_factory, backend_factory>> backend_factories(
    const server::serve_config& c, std::shared_ptr<const gguf::file> f, compute_type ct,
    const std::function<void(uint64_t, uint64_t)>& progress) {
  const std::string& prefill = c.prefill_backend.empty() ? c.backend : c.prefill_backend;
  const std::string& decode = c.decode_backend.empty() ? c.backend : c.decode_backend;
  backend_choice choice{.name = prefill,
                        .compute = ct,
                        .kv_tokens = c.kv_tokens,
                        .kernels = c.kernels,
                        .device = c.device,
                        .progress = progress};
  auto first = backend_named(choice, f, "[engine] backend");
  if (!first) return first.error();
  if (decode == prefill) return std::pair{std::move(*first), backend_factory{}};
  choice.name = decode, choice.progress = {};
  auto second = backend_named(choice, f, "[engine] backend");
  if (!second) return second.error();
  return std::pair{std::move(*first), std::move(*second)};
}

// The HTTP gateway's options but its model card, which only the loaded model gives.
http::gateway_options http_options(const server::serve_config& c) {
  return {.endpoint = c.http_endpoint,
          .allow_public = c.http_public,
          .anonymous_tenant = c.http_anonymous_tenant,
          .tenants = c.engine.tenants,
          .threads = c.http_threads,
          .max_body_bytes = c.http_max_body_bytes,
          .tls_cert_file = c.http_tls_cert,
          .tls_key_file = c.http_tls_key,
          .log = log_line};
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
  if (!a.http.empty()) c.http = true, c.http_endpoint = a.http;
  if (!a.policy.empty()) c.engine.policy = a.policy;
  if (!a.key_file.empty()) c.secret_key_file = a.key_file;
  if (!a.compute.empty()) c.compute = a.compute;
  if (!a.kernels.empty()) c.kernels = a.kernels;
  if (a.threads >= 0) c.engine.threads_per_worker = static_cast<uint32_t>(a.threads);
  if (auto st = server::check_tenant_keys(c); !st) return st.error();
  // Before the default model is written or any model read: a mistyped or public endpoint is
  // told at once, not after loading a 4 GiB file.
  if (auto st = server::check_bindable(c.endpoint); !st) return st.error();
  if (c.development_mode())
    if (auto st = server::check_development_endpoint(c.endpoint); !st) return st.error();
  if (c.http)
    if (auto st = http::check_http_endpoint(http_options(c)); !st) return st.error();
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
    if (args_.config.empty())
      return error{errc::invalid_argument, "no configuration file (--config) to reload"};
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
      return error{errc::invalid_argument, unknown_policy_message(policy)};
    }
    if (auto st = eng.set_tenants(c->engine.tenants); !st) return st.error();
    if (auto st = eng.set_policy(policy); !st) return st.error();
    const auto level = *server::log_level_from_name(c->log_level);  // the file's reader checked it
    server::set_log_level(level);
    log_line("reloaded " + args_.config + ": " +
             server::describe_reload(tenants_, c->engine.tenants, policy_, policy) + "; log level " +
             c->log_level);
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

// SIGTERM: new requests are refused with `shutting_down` while those in flight run to their end,
// for up to `timeout`; a second SIGTERM or SIGINT cuts it short. What is left then ends with
// `shutting_down` when the engine shuts down.
void drain(std::span<server::front_end* const> doors, std::chrono::seconds timeout, const sigset_t& signals) {
  for (server::front_end* d : doors) d->drain();
  const auto busy = [&] {
    return std::any_of(doors.begin(), doors.end(), [](auto* d) { return d->busy(); });
  };
  if (timeout.count() > 0 && busy()) {
    log_line("stopping: the requests in flight may run for up to " + std::to_string(timeout.count()) +
             " s (SIGTERM again cuts them)");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (busy() && std::chrono::steady_clock::now() < deadline) {
    const timespec poll{0, 50'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &poll);
    if (sig == SIGTERM || sig == SIGINT) {
      log_line("stopping: a second signal cuts the drain");
      break;
    }
  }
  log_line(busy() ? "stopping: ending the requests still in flight" : "stopping: every request has ended");
}

// The HTTP gateway when [http] or --http asks for it (else null).
result<std::unique_ptr<http::gateway>> start_http(engine& eng, const server::serve_config& c,
                                                  const server::model_card& card) {
  if (!c.http) return std::unique_ptr<http::gateway>();
  http::gateway_options opt = http_options(c);
  opt.model = card;
  return http::gateway::start(eng, std::move(opt));
}

int run_serve(const serve_args& a) {
  // Blocked before any thread starts, so every thread inherits the mask and sigwait below is the
  // one place the signals arrive.
  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto cfg = configure(a);
  if (!cfg) return fail(cfg.error().message);
  server::set_log_level(*server::log_level_from_name(cfg->log_level));
  std::string secret;
  if (!cfg->development_mode()) {
    auto keys = client::read_key_file(cfg->secret_key_file);
    if (!keys) return fail(keys.error().message);
    secret = keys->secret_key;
    if (cfg->engine.tenants.empty())
      server::log(
          server::log_level::warning,
          "warning: a server key but no tenant with a key: no client can ever connect (list each client's "
          "public key in a [[tenant]], docs/configuration.md)");
  }
  server::notify_status("loading " + cfg->model_path);
  auto model = open_model_file(cfg->model_path);
  if (!model) return fail(model.error().message);
  const compute_type ct = cfg->compute == "f32" ? compute_type::f32 : compute_type::bf16;
  // Loading a large file takes a while: a progress line, and systemd's status line at each tenth.
  auto loading = std::make_shared<progress_line>("loading " + cfg->model_path);
  auto shown_tenth = std::make_shared<std::atomic<int>>(-1);
  auto progress = [loading, shown_tenth, path = cfg->model_path](uint64_t done, uint64_t total) {
    loading->update(done, total);
    const auto tenth = static_cast<int>(10 * done / total);
    if (shown_tenth->exchange(tenth) != tenth)
      server::notify_status("loading " + path + ": " + std::to_string(10 * tenth) + " %");
  };
  auto backends = backend_factories(*cfg, model->gguf, ct, progress);
  if (!backends) return fail(backends.error().message);
  // A worker in another process ([[engine.worker]]) loads the weights; this one needs the
  // file's hash for the join, which refuses a worker with another file.
  join_hello hello;
  if (!cfg->engine.workers.empty()) {
    auto sha = file_sha256(cfg->model_path);
    if (!sha) return fail(sha.error().message);
    hello = local_hello(cfg->model_path, *sha);
    server::notify_status("joining " + worker_list(cfg->engine.workers));
  }
  const auto starting = std::chrono::steady_clock::now();
  auto eng = engine::start(
      cfg->engine, model->tok, std::move(backends->first),
      {.alive = {.every = server::watchdog_ping_period(), .ping = server::notify_watchdog},
       .request_end =
           [](const request_record& r) { server::log(server::log_level::info, server::describe_end(r)); },
       .step_end = {},
       .worker_change = [](const std::string& what) { server::log(server::log_level::warning, what); }},
      std::move(backends->second), hello);
  loading->finish();
  if (!eng) return fail(eng.error().message);
  // A plan timed on a busy machine holds until its cache file goes: the one time to say so.
  const auto plans = process_tuner().decisions();
  if (auto note = busy_timing_note(plans, process_tuner().cache_path()); !note.empty())
    server::log(server::log_level::warning, note);
  if (!cfg->engine.workers.empty()) {
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - starting);
    char took[32];
    std::snprintf(took, sizeof took, "%.1f ms", ms.count());
    log_line("joined " + worker_list(cfg->engine.workers) + " in " + took);
  }

  const std::string& chat_template = model->tok->spec().chat_template;
  const server::model_card card{model->name(),
                                to_string(model->hp.arch),
                                chat_format_name(chat_template),
                                model->hp.n_ctx_train,
                                model->hp.n_vocab,
                                has_tools(detect_chat_format(chat_template).value_or(chat_format::plain)),
                                model->generated};
  reloader reload(a, *cfg);
  // The HTTP gateway first: the ZeroMQ gateway's admin `reload` hands it the new tenants too.
  auto started_web = start_http(**eng, *cfg, card);
  if (!started_web) return fail(started_web.error().message);
  std::unique_ptr<http::gateway> web = std::move(*started_web);
  auto reload_both = [&] {
    auto r = reload(**eng);
    if (r && web) web->reconfigure(r->tenants);
    return r;
  };
  std::unique_ptr<server::gateway> gw;
  server::gateway_options opt{.endpoint = cfg->endpoint,
                              .secret_key = secret,
                              .max_message_bytes = cfg->max_message_bytes,
                              .heartbeat_ms = cfg->heartbeat_ms,
                              .tenants = cfg->engine.tenants,
                              .model = card,
                              .policy = cfg->engine.policy,
                              .reload = reload_both,
                              .log = log_line};
  auto started = server::gateway::start(**eng, std::move(opt));
  if (!started) return fail(started.error().message);
  gw = std::move(*started);

  // The context requests are checked against (the engine's, at most the file's training length).
  const worker_info* decode = (*eng)->decode_worker();
  const std::string placed = decode
                                 ? "prefill on " + (*eng)->worker().device + ", decode on " + decode->device
                                 : "on " + (*eng)->worker().device;
  const std::string summary = cfg->model_path + " (" + to_string(model->hp.arch) + ", " + placed +
                              ", context " + std::to_string((*eng)->worker().n_ctx) + ", policy " +
                              cfg->engine.policy + ", " + std::to_string(cfg->engine.tenants.size()) +
                              " tenants) on " + gw->endpoint() + (web ? " and " + web->url() : std::string());
  std::printf("hearth serve: %s\n", summary.c_str());
  server::notify_ready(summary);
  if (cfg->development_mode()) {
    std::printf("hearth serve: development mode (no server key): loopback only, clients name their tenant\n");
    std::printf("hearth serve: chat with it: hearth chat --endpoint %s\n", gw->endpoint().c_str());
  } else {
    std::printf("hearth serve: server public key %s\n", gw->public_key().c_str());
  }
  if (web) std::printf("hearth serve: Ollama and OpenAI APIs on %s\n", web->url().c_str());
  if (card.generated) std::printf("hearth serve: %s\n", generated_model_note(cfg->model_path).c_str());
  std::fflush(stdout);

  // The engine's failure ends the process, non-zero, for its service manager to start it
  // afresh (docs/operations.md): the listener wakes the signal loop with a signal of its set.
  std::atomic<bool> engine_failed{false};
  const auto grace = std::chrono::duration_cast<std::chrono::milliseconds>(shutdown_grace);
  (*eng)->on_failure([&engine_failed, main_thread = pthread_self()](const std::string& why) {
    server::log(server::log_level::error, "the engine failed: " + why);
    engine_failed = true;
    pthread_kill(main_thread, SIGTERM);
  });
  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig != SIGHUP) break;
    if (auto r = reload(**eng); !r)
      log_line("reload refused: " + r.error().message);
    else {
      if (web) web->reconfigure(r->tenants);
      gw->reconfigure(std::move(*r));
    }
  }
  if (engine_failed) {
    // Every request has its `internal` error (the gateway ended them); a hung worker thread
    // would never let the engine be destroyed, so the process ends without trying.
    gw->stop(grace);
    gw.reset();
    if (web) web->stop(grace);
    log_line("exiting after the engine's failure");
    std::fflush(stdout);
    std::_Exit(1);
  }
  const std::chrono::seconds drain_timeout(cfg->drain_timeout_s);
  server::notify_stopping(drain_timeout + stop_after_drain);
  std::vector<server::front_end*> doors = {gw.get()};
  if (web) doors.push_back(web.get());
  drain(doors, drain_timeout, signals);
  (*eng)->shutdown();
  gw->stop(grace);
  if (web) web->stop(grace);  // before the engine goes: its threads call it until they end
  web.reset();
  // Until the socket closes, latecomers are told `shutting_down`.
  eng->reset();
  gw.reset();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("serve", "Serve a model over the wire protocol (ZeroMQ) until SIGINT/SIGTERM");
  auto a = std::make_shared<serve_args>();
  cmd->add_option("-c,--config", a->config,
                  "TOML configuration file ([server], [model], [engine], [[tenant]])");
  cmd->add_option("-m,--model", a->model, "GGUF model file (default: models/tiny.gguf, written if missing)");
  cmd->add_option("-e,--endpoint", a->endpoint, "ZeroMQ endpoint to bind (default tcp://127.0.0.1:5555)");
  cmd->add_option("--http", a->http,
                  "Also serve Ollama's and OpenAI's HTTP APIs on HOST:PORT (the [http] section's endpoint)");
  cmd->add_option("--policy", a->policy, "Scheduling policy")->check(CLI::IsMember(policy_names()));
  cmd->add_option("--key", a->key_file, "Server key file from `hearth keygen` (turns CURVE on)");
  cmd->add_option("--compute", a->compute, "Matrix compute type")->check(CLI::IsMember({"bf16", "f32"}));
  cmd->add_option("--kernels", a->kernels, "Matmul paths to measure and choose among: auto, onednn, hearth")
      ->check(CLI::IsMember({"auto", "onednn", "hearth"}));
  cmd->add_option("--threads", a->threads, "Kernel threads per worker (0: one per cpu of its set)");
  cmd->callback([a, &exit_code] { exit_code = run_serve(*a); });
}

}  // namespace hearth::cli
