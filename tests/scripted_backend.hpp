#pragma once
// A backend for the tests that delegates to a real one and follows a script: a fixed delay per
// step (so a stream lasts long enough to be cancelled, killed or shut down while it runs), and a
// fault at the n-th step: an exception, or a step that never returns until the test opens its
// gate (a hung backend; the gate must be opened before the engine is destroyed, whose worker
// thread is the one that hangs).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "actors/engine.hpp"
#include "engine_fixture.hpp"
#include "kernels/backend.hpp"

namespace hearth::test {

class gate {
 public:
  void open() {
    {
      std::lock_guard lock(m_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(m_);
    cv_.wait(lock, [this] { return open_; });
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
};

//! Opens its gate when it goes out of scope: declared after the engine, before the engine's
//! destructor waits for the worker thread that hangs on the gate.
struct open_at_exit {
  std::shared_ptr<gate> g;
  ~open_at_exit() {
    if (g) g->open();
  }
};

struct backend_script {
  std::chrono::milliseconds delay{0};  //!< slept before every step
  uint64_t fault_at = 0;               //!< the step (1-based) that fails; 0 = none
  std::shared_ptr<gate> hang = {};     //!< the fault: wait for this gate, then fail; null: throw
};

class scripted_backend final : public backend {
 public:
  scripted_backend(std::unique_ptr<backend> inner, backend_script s)
      : inner_(std::move(inner)), s_(std::move(s)) {}
  const hparams& params() const override { return inner_->params(); }
  kv_pool& kv() override { return inner_->kv(); }
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override {
    if (s_.delay.count() > 0) std::this_thread::sleep_for(s_.delay);
    if (++steps_ == s_.fault_at) {
      if (s_.hang) s_.hang->wait();
      throw std::runtime_error("scripted_backend: step " + std::to_string(s_.fault_at) + " fails");
    }
    return inner_->forward(batch, out);
  }
  result<std::unique_ptr<backend>> share() override {
    return error{errc::unsupported, "scripted_backend: no sharing"};
  }

 private:
  std::unique_ptr<backend> inner_;
  backend_script s_;
  std::atomic<uint64_t> steps_{0};
};

//! An engine on `m` (a KV pool of `kv_tokens` positions) whose backend follows `script`, with
//! one kernel thread.
inline std::unique_ptr<engine> scripted_engine(const engine_model& m, uint64_t kv_tokens, engine_config cfg,
                                               backend_script script, engine_hooks hooks = {}) {
  cfg.threads_per_worker = 1;
  auto e = engine::start(
      cfg, m.tok,
      [&m, kv_tokens, script]() -> result<std::unique_ptr<backend>> {
        return std::unique_ptr<backend>(std::make_unique<scripted_backend>(m.backend(kv_tokens), script));
      },
      std::move(hooks));
  if (!e) FAIL(e.error().message);
  return std::move(*e);
}

}  // namespace hearth::test
