#include "actors/worker_node.hpp"

#include <caf/io/middleman.hpp>

#include "actors/messages.hpp"
#include "actors/worker.hpp"

namespace hearth {

namespace {

// How long a server waits for a worker's answer to its join: the worker loaded its model before
// it listened, so it answers at once unless it is not a Hearth worker.
constexpr auto join_timeout = std::chrono::seconds(10);

// The published face of a worker in its own process: checks each server's join, then passes
// the steps on to the worker and its answers back. Not a delegate, whose answer would go
// straight from the worker: the worker's address would then cross to the server, and CAF 0.17
// keeps such an actor registered past its end at times (seen as a hang at exit, in
// actor_system's wait for the detached worker's thread). A local hop more per step.
struct gate_state {
  worker_actor worker;
  worker_info info;
  join_hello hello;
  std::function<void(const std::string&)> log;
  bool joined = false;
  static inline const char* name = "worker gate";
};

caf::behavior gate(caf::stateful_actor<gate_state>* self, worker_actor worker, worker_info info,
                   join_hello hello, std::function<void(const std::string&)> log) {
  auto& st = self->state;
  st.worker = std::move(worker), st.info = std::move(info), st.hello = std::move(hello),
  st.log = std::move(log);
  return {
      [=](join_atom, const join_hello& server) -> caf::result<worker_info> {
        auto& s = self->state;
        const std::string who = "server on node " + to_string(self->current_sender()->node());
        if (auto ok = check_join(s.hello, server); !ok) {
          s.log("refused the " + who + ": " + ok.error().message);
          return caf::make_error(caf::sec::runtime_error, ok.error().message);
        }
        s.joined = true;
        s.log("joined by the " + who);
        return s.info;
      },
      [=](step& s) -> caf::result<step_result> {
        if (!self->state.joined)
          return step_result{.number = s.number, .error = "worker: no server has joined"};
        auto answer = self->make_response_promise<step_result>();
        self->request(self->state.worker, caf::infinite, std::move(s))
            .then([answer](step_result& r) mutable { answer.deliver(std::move(r)); },
                  [answer](caf::error& err) mutable { answer.deliver(std::move(err)); });
        return answer;
      },
      [=](ready_atom) { return self->state.info; },
  };
}

}  // namespace

struct worker_node::actors {
  actors() : system(configure_actor_system(cfg, true)) {}

  caf::actor_system_config cfg;
  caf::actor_system system;
  worker_actor worker;
  caf::actor gate;
};

worker_node::worker_node() : actors_(std::make_unique<actors>()) {}

worker_node::~worker_node() {
  auto& a = *actors_;
  if (a.gate) {
    (void)a.system.middleman().unpublish(a.gate, port_);
    caf::anon_send_exit(a.gate, caf::exit_reason::user_shutdown);
  }
  if (a.worker) caf::anon_send_exit(a.worker, caf::exit_reason::user_shutdown);
  a.system.await_all_actors_done();
}

result<std::unique_ptr<worker_node>> worker_node::start(worker_node_options opt) {
  std::unique_ptr<worker_node> n(new worker_node());
  auto& a = *n->actors_;
  a.worker = spawn_worker(a.system, {opt.cpus, opt.threads, std::move(opt.make_backend)});
  auto info = await_worker(a.system, a.worker);
  if (!info) return info.error();
  n->info_ = *info;
  auto log = opt.log ? std::move(opt.log) : [](const std::string&) {};
  a.gate = a.system.spawn(gate, a.worker, std::move(*info), std::move(opt.hello), std::move(log));
  const std::string& host = opt.listen.host;
  auto port =
      a.system.middleman().publish(a.gate, opt.listen.port, host.empty() ? nullptr : host.c_str(), true);
  if (!port)
    return error{errc::io,
                 "worker: cannot listen on " + opt.listen.text() + ": " + error_text(a.system, port.error())};
  n->port_ = *port;
  return n;
}

result<std::pair<worker_actor, worker_info>> join_remote_worker(caf::actor_system& sys,
                                                                const worker_endpoint& at,
                                                                const join_hello& hello) {
  // Untyped (messages.hpp): the join, whose layout never changes, tells a worker of another build.
  auto remote = sys.middleman().remote_actor(at.host, at.port);
  if (!remote)
    return error{errc::io, "worker " + at.text() + ": cannot connect: " + error_text(sys, remote.error())};
  result<worker_info> info = error{errc::io, "worker " + at.text() + ": no answer to the join"};
  {
    caf::scoped_actor self{sys};
    self->request(*remote, join_timeout, join_atom::value, hello)
        .receive([&](worker_info& i) { info = std::move(i); },
                 [&](caf::error& err) {
                   info = error{errc::invalid_argument, "worker " + at.text() + ": " + error_text(sys, err)};
                 });
  }
  caf::logger::set_current_actor_system(nullptr);  // as await_worker does
  if (!info) return info.error();
  return std::pair{caf::actor_cast<worker_actor>(*remote), std::move(*info)};
}

}  // namespace hearth
