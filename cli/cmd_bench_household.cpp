#include "cli/cmd_bench_household.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

#include "actors/engine.hpp"
#include "bench/household/http_target.hpp"
#include "bench/household/split_target.hpp"
#include "bench/household/zmq_target.hpp"
#include "clients/cpp/keys.hpp"
#include "kernels/cpu_backend.hpp"
#include "model/file_hash.hpp"
#include "server/http/keys.hpp"
#include "sim/simulator.hpp"

namespace hearth::cli {

void add_household_options(CLI::App* cmd, household_args& a) {
  cmd->add_option("-m,--model", a.model,
                  "GGUF model file: the bench starts its own servers on it (with --server: the served "
                  "model's file, for its tokenizer)")
      ->required();
  cmd->add_option("--workload", a.workload, "Workload TOML (default: the shipped household mix)");
  cmd->add_option("--duration", a.duration_s, "Seconds of arrivals (default: the workload's)");
  cmd->add_option("--drain", a.drain_s, "Seconds the last requests get to end (default: the workload's)");
  cmd->add_option("--kv-tokens", a.kv_tokens, "KV pool capacity in positions")->capture_default_str();
  engine_config& e = a.engine;
  cmd->add_option("--max-waiting", e.max_waiting, "Requests queued before queue_full")->capture_default_str();
  cmd->add_option("--worker-cpus", e.worker_cpus, "Cpuset of the (prefill) worker, hwloc list syntax");
  cmd->add_option("--decode-cpus", e.decode_cpus, "Disaggregated: the decode worker's cpuset");
  cmd->add_option("--worker", a.workers,
                  "tcp://HOST:PORT of a `hearth worker` on the same model: the bench's servers run on it "
                  "instead of loading the model (repeat it for several, data parallel)");
  cmd->add_flag("--local-worker", a.engine.local_worker,
                "With --worker: a worker in the bench's own server too, beside them");
  cmd->add_option("--worker-credentials", a.worker_credentials,
                  "keygen --worker's folder: the workers over TLS (as their --credentials)");
  add_compute_options(cmd, a.compute);
  cmd->add_flag("--no-progress", a.no_progress, "No progress bar");
  cmd->add_option("--sim", a.sim,
                  "Run on the simulator over this step profile (`hearth bench profile`) instead of a server");
  cmd->add_option("--sim-decode", a.sim_decode,
                  "Simulated, disaggregated: the decode worker's profile (default: --sim's)");
  cmd->add_option("--scale-compute", a.scale_compute,
                  "Simulated: what if the CPU computed this many times faster")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--scale-bandwidth", a.scale_bandwidth,
                  "Simulated: what if memory were this many times faster")
      ->check(CLI::PositiveNumber);
}

void add_server_options(CLI::App* cmd, household_args& a) {
  cmd->add_option("--server", a.server, "Drive the `hearth serve` at this endpoint instead of starting one");
  cmd->add_option("--server-key", a.server_key,
                  "--server's public key (Z85), as `hearth serve` prints it (CURVE)");
  cmd->add_option("--key", a.key_file, "This client's key file from `hearth keygen` (CURVE)");
  cmd->add_option("--http-keys", a.http_keys,
                  "With --server http://: a file of `CLASS KEY` lines, each class's Bearer key (its tenant); "
                  "a `metrics KEY` line: an admin tenant's key, to read the gauges from /metrics");
  cmd->add_option(
         "--via", a.via,
         "The bench's own server: requests through its ZeroMQ gateway, its HTTP gateway, or both "
         "(alternate requests of each class, twice with the gateways swapped, and a table of what each "
         "gateway costs)")
      ->check(CLI::IsMember({"zmq", "http", "both"}))
      ->capture_default_str();
}

backend_factory household_model::factory() const {
  return [p = prototype]() -> result<std::unique_ptr<backend>> { return p->share(); };
}

result<household::run_result> run_household(const household_args& a, const engine_config& cfg,
                                            const household::workload& w, const household_model& m,
                                            const household::schedule& s, const run_options& o) {
  if (m.profile) {
    engine_config c = cfg;
    c.tenants = household::tenants_of(w);
    const uint32_t block = 16;
    const sim::sim_engine e{.cfg = c,
                            .tok = m.file.tok.get(),
                            .n_ctx = m.n_ctx(),
                            .n_vocab = static_cast<uint32_t>(m.tok().n_vocab()),
                            .n_blocks = static_cast<uint32_t>((a.kv_tokens + block - 1) / block),
                            .block_size = block,
                            .profile = *m.profile,
                            .decode_profile = m.decode_profile};
    if (o.started) o.started();
    return sim::simulate(e, s.requests, s.cls, w.drain_s);
  }
  auto server = bench_server::open(a, cfg, w, m, o);
  if (!server) return server.error();
  if (o.started) o.started();
  return household::run_open_loop((*server)->target(), s.requests, s.cls,
                                  {.drain_s = w.drain_s, .progress = o.progress});
}

std::function<void(const step&, double)> served_recorder::hook() {
  return [this](const step& s, double ms) {
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard lock(mutex_);
    steps_.add(s, ms, now);
  };
}

void served_recorder::add_requests(const household::run_result& run) {
  const std::lock_guard lock(mutex_);
  for (const auto& r : run.records) {
    if (r.kind != event_kind::done || r.token_s.empty()) continue;
    const double split = r.server.queue_ms + r.server.prefill_ms + r.server.first_step_ms;
    requests_.push_back({r.prompt_tokens, r.ttft_ms() - split});
  }
}

sim::served_log served_recorder::take() {
  const std::lock_guard lock(mutex_);
  return {std::move(steps_.steps()), std::move(requests_)};
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

status<> household_model::load_backend(const household_args& a) {
  if (!a.server.empty()) return {};
  if (!a.sim.empty()) {
    auto p = sim::load_profile(a.sim);
    if (!p) return p.error();
    profile = p->scaled(a.scale_compute, a.scale_bandwidth);
    if (a.sim_decode.empty()) return {};
    auto d = sim::load_profile(a.sim_decode);
    if (!d) return d.error();
    decode_profile = d->scaled(a.scale_compute, a.scale_bandwidth);
    return {};
  }
  if (!a.workers.empty()) {
    auto sha = file_sha256(a.model);
    if (!sha) return sha.error();
    hello = local_hello(a.model, *sha);
    if (!a.engine.local_worker) return {};
  }
  auto be = cpu_backend::load(*file.gguf, {.compute = apply_compute_args(a.compute),
                                           .block_size = 16,
                                           .kv_tokens = a.kv_tokens,
                                           .kernels = kernels_of(a.compute)});
  if (!be) return be.error();
  prototype = std::shared_ptr<backend>(std::move(*be));
  return {};
}

engine_config household_engine(const household_args& a) {
  engine_config c = a.engine;
  c.mode = a.mode == "disaggregated" ? placement_mode::disaggregated : placement_mode::colocated;
  c.threads_per_worker = a.compute.threads > 0 ? static_cast<uint32_t>(a.compute.threads) : 0;
  for (const std::string& w : a.workers) {
    worker_endpoint at = parse_worker_endpoint(w).value();  // check_server_options read it
    at.credentials = a.worker_credentials;
    c.workers.push_back(std::move(at));
  }
  return c;
}

namespace {

// A key for one class of the bench's own server: 24 random bytes as hex.
std::string random_key() {
  std::random_device rd;
  std::string key;
  char hex[9];
  for (int i = 0; i < 6; ++i) {
    std::snprintf(hex, sizeof hex, "%08x", rd());
    key += hex;
  }
  return key;
}

result<client::options> zmq_options(const household_args& a) {
  client::options opt{.endpoint = a.server};
  if (a.server_key.empty() && a.key_file.empty()) return opt;
  if (a.server.empty() || a.server_key.empty() || a.key_file.empty())
    return error{errc::invalid_argument, "CURVE needs --server, --server-key and --key"};
  auto keys = client::read_key_file(a.key_file);
  if (!keys) return keys.error();
  opt.server_key = a.server_key;
  opt.keys = *keys;
  return opt;
}

template <class T>
result<std::unique_ptr<household::bench_target>> as_target(result<std::unique_ptr<T>> t) {
  if (!t) return t.error();
  return std::unique_ptr<household::bench_target>(std::move(*t));
}

}  // namespace

status<> check_server_options(const household_args& a) {
  if (a.via != "zmq" && !a.server.empty())
    return error{errc::invalid_argument,
                 "--via is for the bench's own server: --server's scheme says the gateway"};
  if (!a.sim.empty() && (a.via != "zmq" || !a.server.empty()))
    return error{errc::invalid_argument, "--sim runs no server: it takes neither --server nor --via"};
  if (a.sim.empty() && (!a.sim_decode.empty() || a.scale_compute != 1 || a.scale_bandwidth != 1))
    return error{errc::invalid_argument, "--sim-decode, --scale-compute and --scale-bandwidth need --sim"};
  if (!a.http_keys.empty() && !a.server.starts_with("http://"))
    return error{errc::invalid_argument, "--http-keys needs --server http://HOST:PORT"};
  if (!a.workers.empty() && (!a.server.empty() || !a.sim.empty()))
    return error{errc::invalid_argument,
                 "--worker is for the bench's own server: not with --server or --sim"};
  if ((!a.worker_credentials.empty() || a.engine.local_worker) && a.workers.empty())
    return error{errc::invalid_argument, "--worker-credentials and --local-worker need --worker"};
  for (const std::string& w : a.workers)
    if (auto at = parse_worker_endpoint(w); !at)
      return error{errc::invalid_argument, "--worker " + at.error().message};
  return {};
}

result<std::unique_ptr<bench_server>> bench_server::open(const household_args& a, const engine_config& cfg,
                                                         const household::workload& w,
                                                         const household_model& m, const run_options& o) {
  std::unique_ptr<bench_server> s(new bench_server());
  if (a.server.empty()) {
    if (auto st = s->start_own(a, cfg, w, m, o); !st) return st.error();
    return s;
  }
  if (a.server.starts_with("http://")) {
    if (!a.server_key.empty() || !a.key_file.empty())
      return error{errc::invalid_argument,
                   "--server-key and --key are CURVE's: an http:// server takes --http-keys"};
    household::http_target_options opt{.endpoint = a.server, .keys = {}};
    if (!a.http_keys.empty()) {
      auto keys = household::read_http_keys(a.http_keys);
      if (!keys) return keys.error();
      opt.keys = std::move(*keys);
      if (auto admin = opt.keys.extract("metrics")) opt.metrics_key = std::move(admin.mapped());
    }
    auto t = as_target(household::http_target::connect(std::move(opt)));
    if (!t) return t.error();
    s->target_ = std::move(*t);
    return s;
  }
  auto opt = zmq_options(a);
  if (!opt) return opt.error();
  auto t = as_target(household::zmq_target::connect(*opt));
  if (!t) return t.error();
  s->target_ = std::move(*t);
  return s;
}

status<> bench_server::start_own(const household_args& a, const engine_config& cfg,
                                 const household::workload& w, const household_model& m,
                                 const run_options& o) {
  const bool http = a.via != "zmq";
  engine_config c = cfg;
  c.tenants = household::tenants_of(w);
  std::map<std::string, std::string> keys;
  for (tenant_config& t : c.tenants) {
    if (!http) continue;
    keys[t.name] = random_key();
    t.http_key_sha256 = http::sha256_hex(keys[t.name]);
  }
  auto e = engine::start(c, m.file.tok, m.factory(), {.alive = {}, .request_end = {}, .step_end = o.step_end},
                         {}, m.hello);
  if (!e) return e.error();
  engine_ = std::move(*e);
  std::string dir = (std::filesystem::temp_directory_path() / "hearth-bench-XXXXXX").string();
  if (!mkdtemp(dir.data()))
    return error{errc::io, "cannot create a temporary folder for the ipc:// endpoint"};
  dir_ = dir;
  const server::model_card card{m.file.name(), "", "", m.n_ctx(), static_cast<uint32_t>(m.tok().n_vocab())};
  // The ZeroMQ gateway always runs: the gauges and figures come from its `stats`.
  auto g = server::gateway::start(*engine_, {.endpoint = "ipc://" + (dir_ / "hearth.sock").string(),
                                             .tenants = c.tenants,
                                             .model = card,
                                             .policy = c.policy});
  if (!g) return g.error();
  gateway_ = std::move(*g);
  auto zmq = as_target(household::zmq_target::connect({.endpoint = gateway_->endpoint()}));
  if (!zmq) return zmq.error();
  if (!http) {
    target_ = std::move(*zmq);
    return {};
  }
  // More threads than the engine runs sequences: a stream waiting in the queue holds one too.
  auto h = http::gateway::start(
      *engine_, {.endpoint = "127.0.0.1:0", .tenants = c.tenants, .model = card, .threads = 256});
  if (!h) return h.error();
  http_gateway_ = std::move(*h);
  auto ht = as_target(
      household::http_target::connect({.endpoint = "http://" + http_gateway_->endpoint(), .keys = keys}));
  if (!ht) return ht.error();
  // --via http too: every lane 1, and the gauges from the ZeroMQ gateway's `stats`.
  std::vector<std::unique_ptr<household::bench_target>> targets;
  targets.push_back(std::move(*zmq));
  targets.push_back(std::move(*ht));
  target_ = std::make_unique<household::split_target>(std::move(targets), o.lanes);
  return {};
}

bench_server::bench_server() = default;

bench_server::~bench_server() {
  target_.reset();
  if (http_gateway_) http_gateway_->stop(std::chrono::milliseconds(0));
  http_gateway_.reset();
  if (gateway_) gateway_->stop(std::chrono::milliseconds(0));
  gateway_.reset();
  engine_.reset();  // requests left unfinished end, unrecorded
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
}

nlohmann::json household_config_json(const household_args& a, const household::workload& w) {
  return {{"model", a.model},
          {"target", !a.server.empty() ? a.server
                     : a.via == "zmq"  ? "its own server (engine and gateway), over ipc://"
                     : a.via == "http" ? "its own server (engine and gateways), over HTTP on loopback"
                                       : "its own server (engine and gateways), alternating ipc:// and HTTP"},
          {"workload_file", a.workload.empty() ? "(built in)" : a.workload},
          {"workload", household::to_json(w)},
          {"kv_tokens", a.kv_tokens},
          {"compute", a.compute.compute},
          {"threads", a.compute.threads}};
}

}  // namespace hearth::cli
