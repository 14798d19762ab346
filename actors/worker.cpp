#include "actors/worker.hpp"

#include "actors/messages.hpp"
#include "actors/placement.hpp"
#include "core/step_runner.hpp"
#include "kernels/parallel.hpp"

namespace hearth {

namespace {

struct worker_state {
  std::shared_ptr<backend> be;  // observed (weakly) by readers of its pool (worker_options::pool_out)
  std::unique_ptr<step_runner> runner;
  worker_info info;
  std::string failure;  // why the worker cannot run steps, or ""
  static inline const char* name = "worker";
};

// Runs on the worker's own thread (the actor is detached): pin, then threads, then load.
void start(worker_state& st, const worker_options& opt) {
  unsigned threads = opt.threads;
  if (!opt.cpus.empty()) {
    auto p = pin_this_thread(opt.cpus);
    if (!p) {
      st.failure = p.error().message;
      return;
    }
    st.info.cpus = p->cpus;
    if (threads == 0) threads = p->n_cpus;
  }
  if (threads == 0) threads = available_cpus();
  set_kernel_threads(static_cast<int>(threads));
  auto be = opt.make_backend();
  if (!be) {
    st.failure = be.error().message;
    return;
  }
  st.be = std::move(*be);
  st.runner = std::make_unique<step_runner>(*st.be, opt.copy_from);
  if (opt.pool_out) *opt.pool_out = std::shared_ptr<const kv_store>(st.be, &st.be->kv());  // aliasing
  const auto& layout = st.be->kv().layout();
  st.info.block_bytes = layout.block_bytes();
  st.info.n_ctx = st.be->params().n_ctx_train;
  st.info.n_vocab = st.be->params().n_vocab;
  st.info.n_blocks = st.be->kv().n_blocks();
  st.info.block_size = layout.block_size;
  st.info.threads = threads;
  st.info.device = st.be->device_name();
}

worker_actor::behavior_type worker(worker_actor::stateful_pointer<worker_state> self, worker_options opt) {
  start(self->state, opt);
  return {
      [=](ready_atom) -> caf::result<worker_info> {
        if (!self->state.failure.empty())
          return caf::make_error(caf::sec::runtime_error, self->state.failure);
        return self->state.info;
      },
      // Queued behind a step in flight: a decode side on another node reads a pool in this
      // process directly, and one in `hearth worker` through its gate (worker_node.cpp).
      [=](kv_read_atom, const std::vector<uint32_t>& ids) -> caf::result<kv_bytes> {
        if (!self->state.be)
          return caf::make_error(caf::sec::runtime_error, "worker: " + self->state.failure);
        auto bytes = read_kv_blocks(self->state.be->kv(), ids);
        if (!bytes) return caf::make_error(caf::sec::runtime_error, bytes.error().message);
        return std::move(*bytes);
      },
      [=](const step& s) -> caf::result<step_result> {
        if (!self->state.runner)
          return step_result{.number = s.number, .error = "worker: " + self->state.failure};
        try {
          return self->state.runner->run(s);
        } catch (const std::exception& e) {
          // A backend that throws is in a state nobody knows: the worker stops, and with it the
          // engine (its supervisor), rather than run the next step on it. The step is answered
          // with the error it stops with, not as a failed step whose requests alone would end:
          // the engine's failure is recorded before any request hears of it.
          const std::string why =
              std::string("the backend threw at step ") + std::to_string(s.number) + ": " + e.what();
          const caf::error reason = caf::make_error(caf::sec::runtime_error, why);
          self->quit(reason);
          return reason;
        }
      },
  };
}

}  // namespace

result<kv_bytes> read_kv_blocks(const kv_store& pool, const std::vector<uint32_t>& ids) {
  kv_bytes out(ids.size() * pool.layout().block_bytes());
  if (auto st = pool.read_blocks(ids, std::as_writable_bytes(std::span(out))); !st)
    return error{st.error().code, "worker: KV blocks to ship: " + st.error().message};
  return out;
}

result<kv_bytes> read_kv_blocks(const std::weak_ptr<const kv_store>& pool, const std::vector<uint32_t>& ids) {
  const auto held = pool.lock();  // for the read's length only: the worker frees its backend itself
  if (!held) return error{errc::io, "worker: stopped, its KV blocks are gone"};
  return read_kv_blocks(*held, ids);
}

worker_actor spawn_worker(caf::actor_system& sys, worker_options opt) {
  return sys.spawn<caf::detached>(worker, std::move(opt));
}

result<worker_info> await_worker(caf::actor_system& sys, const worker_actor& w) {
  result<worker_info> out = error{errc::invalid_argument, "worker: no answer"};
  {
    caf::scoped_actor self{sys};
    self->request(w, caf::infinite, ready_atom::value)
        .receive([&](worker_info& info) { out = std::move(info); },
                 [&](caf::error& err) {
                   out = error{errc::invalid_argument, error_text(sys, err)};
                 });
  }
  // The thread's reference to CAF's logger, which a scoped actor takes (see engine.cpp).
  caf::logger::set_current_actor_system(nullptr);
  return out;
}

}  // namespace hearth
