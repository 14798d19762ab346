#pragma once
// What `hearth bench serve` and `hearth bench sweep` share: the workload (file or the shipped
// household mix) and trace, the model loaded once, and the server each run drives: a running one
// (--server: through the ZeroMQ client, or over HTTP for an http:// endpoint), or an engine
// started here with a ZeroMQ gateway on an ipc:// endpoint in a temporary folder, and with
// --via http or both an HTTP gateway on loopback beside it.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "actors/worker_info.hpp"
#include "actors/worker_join.hpp"
#include "bench/household/report.hpp"
#include "bench/household/schedule.hpp"
#include "bench/household/target.hpp"
#include "cli/common_options.hpp"
#include "model/model_file.hpp"
#include "server/gateway.hpp"
#include "server/http/gateway.hpp"
#include "sim/served.hpp"
#include "sim/step_profile.hpp"

namespace hearth {
class engine;  // the members below hold it by pointer only
}

namespace hearth::cli {

struct household_args {
  std::string model;
  std::string server;                //!< a running server's endpoint; empty: start one per run
  std::string server_key, key_file;  //!< CURVE, with --server
  std::string http_keys;             //!< with --server http://: a file of `CLASS KEY` lines
  std::string via = "zmq";           //!< the bench's own server: zmq, http, or both (alternate requests)
  std::string workload;              //!< empty: the shipped household mix
  std::string sim;                   //!< a step profile: run on the simulator (sim/), not a server
  std::string sim_decode;            //!< disaggregated: the decode lane's profile (default: --sim's)
  double scale_compute = 1, scale_bandwidth = 1;  //!< what-if hardware for the profiles
  std::string mode = "colocated";
  compute_args compute;
  uint64_t kv_tokens = 16384;
  engine_config engine;
  //! --worker: `hearth worker`s the bench's own servers schedule onto (data parallel), and
  //! --worker-credentials: their TLS folder.
  std::vector<std::string> workers = {};
  std::string worker_credentials = {};
  double duration_s = 0;  //!< 0: the workload's
  double drain_s = -1;    //!< < 0: the workload's
  bool no_progress = false;
};

void add_household_options(CLI::App* cmd, household_args& a);
//! --server, --server-key, --key, --http-keys, --via: `bench serve` only (a sweep changes the
//! server's configuration).
void add_server_options(CLI::App* cmd, household_args& a);
//! Whether the options go together (--via only without --server or --sim, --http-keys only
//! with http://, --sim-decode and the what-if scales only with --sim, --worker only for the
//! bench's own server, each a worker endpoint).
status<> check_server_options(const household_args& a);

//! The model, loaded once: every engine of a sweep shares its converted weights and KV pool.
//! With --server only the file is opened (prompts are synthesized to token counts).
struct household_model {
  model_file file;
  std::shared_ptr<backend> prototype;  //!< null with --server or --sim, and until load_backend
  std::optional<sim::step_profile> profile = std::nullopt;         //!< --sim's, once load_backend read it
  std::optional<sim::step_profile> decode_profile = std::nullopt;  //!< --sim-decode's
  join_hello hello = {};  //!< with --worker: what the bench's servers join the workers with
  const tokenizer& tok() const { return *file.tok; }
  uint32_t n_ctx() const { return file.hp.n_ctx_train; }
  backend_factory factory() const;
  //! Loads the weights and KV pool for the bench's own server, or --sim's profile (nothing
  //! with --server; with --worker, the file's hash for the join).
  status<> load_backend(const household_args& a);
};

//! What a run takes beside its configuration.
struct run_options {
  std::vector<uint8_t> lanes = {};  //!< with --via http or both, each request's gateway (0 ZeroMQ, 1 HTTP)
  std::FILE* progress = nullptr;    //!< a bar's stream, or none
  //! Called once the run begins (after a server has answered): an error before it is all the
  //! bench prints.
  std::function<void()> started = {};
  //! The bench's own server only: each step it runs (engine_hooks::step_end).
  std::function<void(const step&, double round_trip_ms)> step_end = {};
};

//! What the bench's own server serves over one or more runs, to calibrate a profile on
//! (sim/served.hpp): hook() as each run's run_options::step_end, add_requests() with each run's
//! result, then take().
class served_recorder {
 public:
  std::function<void(const step&, double round_trip_ms)> hook();
  //! Its done requests' TTFT beyond the server's split of it (queue, prefill, first step).
  void add_requests(const household::run_result& run);
  sim::served_log take();

 private:
  std::mutex mutex_;  // the steps are heard on the scheduler's thread
  sim::step_recorder steps_;
  std::vector<sim::request_path> requests_;
};

//! What one run drives. Destroyed in order: the target (cancelling what is in flight), the
//! gateways, the engine, then the temporary folder of the ipc:// endpoint.
class bench_server {
 public:
  //! --server: connects to it. Otherwise starts an engine with `cfg`, whose tenants are the
  //! workload's classes (priority, weight, SLOs, so the policies see them; over HTTP each with a
  //! key of its own, made for the run), and its gateways; `o.lanes` and `o.step_end` as
  //! run_options says.
  static result<std::unique_ptr<bench_server>> open(const household_args& a, const engine_config& cfg,
                                                    const household::workload& w, const household_model& m,
                                                    const run_options& o);
  ~bench_server();
  household::bench_target& target() { return *target_; }

 private:
  bench_server();
  //! Starts the engine and its gateways (the HTTP one unless --via zmq), and the target.
  status<> start_own(const household_args& a, const engine_config& cfg, const household::workload& w,
                     const household_model& m, const run_options& o);
  std::filesystem::path dir_;
  std::unique_ptr<engine> engine_;
  std::unique_ptr<server::gateway> gateway_;
  std::unique_ptr<http::gateway> http_gateway_;
  std::unique_ptr<household::bench_target> target_;
};

//! One run of `s` under `cfg`: on the simulator with --sim, else on a server (the bench's own, or
//! --server's).
result<household::run_result> run_household(const household_args& a, const engine_config& cfg,
                                            const household::workload& w, const household_model& m,
                                            const household::schedule& s, const run_options& o = {});

result<household::workload> load_household_workload(const household_args& a);
//! The engine configuration from the flags (mode resolved).
engine_config household_engine(const household_args& a);
//! The configuration as it goes into every JSON report.
nlohmann::json household_config_json(const household_args& a, const household::workload& w);

}  // namespace hearth::cli
