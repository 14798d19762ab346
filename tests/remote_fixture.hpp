#pragma once
// `hearth worker` processes for the tests of workers in other processes, and the model file
// they and the engine under test share.
#include <catch2/catch.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "child_process.hpp"
#include "engine_harness.hpp"
#include "model/file_hash.hpp"
#include "scratch_dir.hpp"

namespace hearth::test {

// `hearth worker` on a free loopback port, its stdout read up to the line saying where it
// listens; SIGTERM and a clean exit at the end.
class worker_process {
 public:
  //! port 0: a free one; `extra`: more options (--kv-tokens N).
  explicit worker_process(const std::string& model, uint16_t port = 0,
                          const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {
        HEARTH_EXE, "worker", "--listen",  "tcp://127.0.0.1:" + std::to_string(port),
        "--model",  model,    "--threads", "1"};
    // f32 unless `extra` names another (the engine fixture's backends compute in f32).
    if (std::ranges::find(extra, "--compute") == extra.end()) args.insert(args.end(), {"--compute", "f32"});
    args.insert(args.end(), extra.begin(), extra.end());
    const piped_child child = spawn_piped(HEARTH_EXE, std::move(args));
    pid_ = child.pid;
    const std::string line = read_line(child.out);
    ::close(child.out);
    const auto at = line.find("listening on tcp://127.0.0.1:");
    REQUIRE(at != std::string::npos);
    port_ = static_cast<uint16_t>(std::stoi(line.substr(at + 29)));
  }
  ~worker_process() {
    if (pid_ > 0) ::kill(pid_, SIGKILL), ::waitpid(pid_, nullptr, 0);
  }
  worker_process(const worker_process&) = delete;
  worker_process& operator=(const worker_process&) = delete;

  uint16_t port() const { return port_; }
  //! SIGTERM, then its exit status (-1: it did not exit normally).
  int stop() {
    ::kill(pid_, SIGTERM);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  //! kill -9, as a machine that loses power.
  void kill_hard() {
    ::kill(pid_, SIGKILL), ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  static std::string read_line(int fd) {
    std::string line;
    char c = 0;
    pollfd p{fd, POLLIN, 0};
    while (line.empty() || line.back() != '\n') {
      REQUIRE(::poll(&p, 1, 30000) == 1);  // a tiny model loads in well under a second
      REQUIRE(::read(fd, &c, 1) == 1);
      line += c;
    }
    return line;
  }

  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

struct remote_fixture {
  scratch_dir dir{"hearth_worker"};
  std::unique_ptr<engine_model> model;
  std::string path = dir.path + "/micro.gguf";
  join_hello hello;

  //! `m`: another model than the micro one (written to the same file name).
  explicit remote_fixture(std::unique_ptr<engine_model> m = engine_model::make()) : model(std::move(m)) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(model->bytes.data()),
               static_cast<std::streamsize>(model->bytes.size()));
    hello = local_hello(path, file_sha256(path).value());
  }

  result<std::unique_ptr<engine>> start(uint16_t port, const join_hello& h) const {
    return start(std::vector<uint16_t>{port}, h);
  }
  result<std::unique_ptr<engine>> start(const std::vector<uint16_t>& ports, const join_hello& h) const {
    engine_config cfg;
    for (uint16_t p : ports) cfg.workers.push_back({"127.0.0.1", p});
    return engine::start(cfg, model->tok, nullptr, {}, {}, h);
  }
};

//! Which side of a disaggregated pair runs in another process.
struct layout {
  bool prefill_remote, decode_remote;
};

inline std::string name_of(layout l) {
  return std::string("prefill ") + (l.prefill_remote ? "remote" : "here") + ", decode " +
         (l.decode_remote ? "remote" : "here");
}

//! The engine of a pair: `ports` the workers of the remote sides, prefill's first; the sides here
//! get a pool of kv_tokens positions (a remote one's is its --kv-tokens, which must be the same).
inline result<std::unique_ptr<engine>> start_pair(const remote_fixture& f, layout l,
                                                  const std::vector<uint16_t>& ports,
                                                  uint64_t kv_tokens = 16384) {
  engine_config cfg;
  cfg.mode = placement_mode::disaggregated;
  cfg.threads_per_worker = 1;
  size_t next = 0;
  for (worker_role side : {worker_role::prefill, worker_role::decode}) {
    if (!(side == worker_role::prefill ? l.prefill_remote : l.decode_remote)) continue;
    worker_endpoint w{"127.0.0.1", ports.at(next++)};
    w.role = side;
    cfg.workers.push_back(w);
  }
  return engine::start(
      cfg, f.model->tok,
      [&f, kv_tokens]() -> result<std::unique_ptr<backend>> {
        return std::unique_ptr<backend>(f.model->backend(kv_tokens));
      },
      {}, {}, f.hello);
}

//! The bytes of one KV block of the fixture's model, as a pair ships it.
inline uint64_t block_bytes(const remote_fixture& f) {
  return f.model->backend(16)->kv().layout().block_bytes();
}

}  // namespace hearth::test
