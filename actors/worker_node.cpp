#include "actors/worker_node.hpp"

#include <caf/io/middleman.hpp>

#include <optional>
#include <string_view>
#include <thread>

#include "actors/messages.hpp"
#include "actors/worker.hpp"

namespace hearth {

namespace {

// How long a server waits for a worker's answer to its join: the worker loaded its model before
// it listened, so it answers at once unless it is not a Hearth worker. Also how long a joined
// server has to attach its scheduler before the worker forgets it.
constexpr auto join_timeout = std::chrono::seconds(10);
// How long a server retries a worker that serves another: a server that died without closing
// its connection holds the worker until the middleman's connection timeout (messages.cpp, 5 s)
// drops it, which a restarted server should not fail on.
constexpr auto busy_retry_for = std::chrono::seconds(7);
constexpr auto busy_retry_every = std::chrono::milliseconds(100);
// A refusal that a retry may cure starts so.
constexpr std::string_view busy = "busy: ";
// How long a stopping worker waits for its server to take note.
constexpr auto leave_timeout = std::chrono::seconds(2);
// CAF 0.17's middleman stamps a connection it opens as last seen only once the peer's first
// bytes arrive, so a heartbeat (messages.cpp, every second) that comes while the handshake is
// under way drops it at once as timed out: a TLS handshake under load takes long enough for that
// to happen now and then. Such a connect is tried afresh; each try ends by the next heartbeat.
constexpr int connect_tries = 4;

// The published face of a worker in its own process. It serves one server at a time (two
// schedulers would hand out the same KV blocks): a join checks the server's hello and reserves
// the worker for its node; the server then attaches its scheduler, which the gate monitors, so
// a server that leaves (or whose connection breaks) frees the worker for the next. Steps pass
// on to the worker and their answers back: not a delegate, whose answer would go straight from
// the worker, sending the worker's own address across, and CAF 0.17 keeps such an actor
// registered past its end at times (seen as a hang at exit, in actor_system's wait for the
// detached worker's thread). A local hop more per step.
struct gate_state {
  worker_actor worker;
  std::weak_ptr<const kv_store> pool;  // the worker's, read here beside its steps (kv_read)
  worker_info info;
  join_hello hello;
  std::function<void(const std::string&)> log;
  std::optional<caf::node_id> server;  // the node it is reserved for
  caf::actor_addr scheduler;           // that server's scheduler, once attached
  uint64_t joins = 0;                  // which join a lapse timer is for
  static inline const char* name = "worker gate";
};

using gate_ptr = caf::stateful_actor<gate_state>*;

std::string server_name(const caf::node_id& n) {
  return "the server on node " + to_string(n);
}

void release(gate_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.server) return;
  st.log(server_name(*st.server) + " " + why + "; waiting for the next one");
  st.server.reset();
  st.scheduler = {};
}

caf::result<worker_info> on_join(gate_ptr self, const join_hello& hello) {
  auto& st = self->state;
  const caf::node_id from = self->current_sender()->node();
  if (auto ok = check_join(st.hello, hello); !ok) {
    st.log("refused " + server_name(from) + ": " + ok.error().message);
    return caf::make_error(caf::sec::runtime_error, ok.error().message);
  }
  if (st.server && *st.server != from) {
    std::string why(busy);
    why += "the worker serves " + server_name(*st.server) + " (one server at a time)";
    st.log("refused " + server_name(from) + ": " + why);
    return caf::make_error(caf::sec::runtime_error, why);
  }
  st.server = from;
  st.scheduler = {};
  st.log("joined by " + server_name(from));
  self->delayed_send(self, join_timeout, join_atom::value, ++st.joins);
  return st.info;
}

// Whether the message being handled comes from the server that joined.
bool from_server(gate_ptr self) {
  const auto& server = self->state.server;
  return server && *server == self->current_sender()->node();
}

// A decode side on another node asks for blocks of this worker's pool: read here, on the gate's
// thread, while the worker may run its next step (which writes none of them: their request's
// decode step is out, so the scheduler plans nothing for it here meanwhile).
caf::result<kv_bytes> on_kv_read(gate_ptr self, const std::vector<uint32_t>& ids) {
  if (!from_server(self))
    return caf::make_error(caf::sec::runtime_error, "worker: this server has not joined");
  auto bytes = read_kv_blocks(self->state.pool, ids);
  if (!bytes) return caf::make_error(caf::sec::runtime_error, bytes.error().message);
  return std::move(*bytes);
}

// Before the worker stops: its server is told and answers, so the stop is not taken for a
// lost connection (the gate's down message, sent as it exits, can still be in the middleman's
// buffers when the process closes the socket). An answer that never comes waits leave_timeout.
caf::result<bool> leave(gate_ptr self) {
  auto& st = self->state;
  if (self->current_sender()->node() != self->node())
    return caf::make_error(caf::sec::runtime_error, "worker: only its own process stops it");
  if (!st.scheduler) return true;
  auto done = self->make_response_promise<bool>();
  auto scheduler = caf::actor_cast<caf::actor>(st.scheduler);
  self->request(scheduler, leave_timeout, leave_atom::value)
      .then([done](bool) mutable { done.deliver(true); },
            [done](caf::error&) mutable { done.deliver(true); });
  return done;
}

caf::behavior gate(gate_ptr self, worker_actor worker, std::weak_ptr<const kv_store> pool, worker_info info,
                   join_hello hello, std::function<void(const std::string&)> log) {
  auto& st = self->state;
  st.worker = std::move(worker), st.pool = std::move(pool), st.info = std::move(info),
  st.hello = std::move(hello), st.log = std::move(log);
  self->set_down_handler([self](const caf::down_msg& down) {
    if (down.source != self->state.scheduler) return;
    const auto& r = down.reason;
    release(self, r == caf::exit_reason::user_shutdown ? std::string("left")
                  : r == caf::exit_reason::remote_link_unreachable
                      ? std::string("is gone (the connection was lost)")
                      : "left (" + error_text(self->system(), r) + ")");
  });
  return {
      [=](join_atom, const join_hello& server) { return on_join(self, server); },
      [=](join_atom, const caf::actor& scheduler) -> caf::result<bool> {
        auto& s = self->state;
        if (!s.server || *s.server != scheduler.node())
          return caf::make_error(caf::sec::runtime_error, "worker: attach without a join");
        s.scheduler = scheduler.address();
        self->monitor(scheduler);
        return true;
      },
      [=](join_atom, uint64_t join) {
        if (join == self->state.joins && !self->state.scheduler) release(self, "joined but did not attach");
      },
      [=](kv_read_atom, const std::vector<uint32_t>& ids) { return on_kv_read(self, ids); },
      [=](step& s) -> caf::result<step_result> {
        if (!from_server(self))
          return step_result{.number = s.number, .error = "worker: this server has not joined"};
        auto answer = self->make_response_promise<step_result>();
        self->request(self->state.worker, caf::infinite, std::move(s))
            .then([answer](step_result& r) mutable { answer.deliver(std::move(r)); },
                  [answer](caf::error& err) mutable { answer.deliver(std::move(err)); });
        return answer;
      },
      [=](ready_atom) { return self->state.info; },
      [=](leave_atom) { return leave(self); },
  };
}

}  // namespace

struct worker_node::actors {
  explicit actors(const std::string& credentials)
      : system(configure_actor_system(cfg, true, credentials)), tls(!credentials.empty()) {}

  caf::actor_system_config cfg;
  caf::actor_system system;
  worker_actor worker;
  caf::actor gate;
  bool tls;
};

worker_node::worker_node(const std::string& credentials) : actors_(std::make_unique<actors>(credentials)) {}

worker_node::~worker_node() {
  auto& a = *actors_;
  if (a.gate) {
    {
      caf::scoped_actor self{a.system};
      self->request(a.gate, caf::infinite, leave_atom::value).receive([](bool) {}, [](caf::error&) {});
    }
    caf::logger::set_current_actor_system(nullptr);  // as await_worker does
    // Debian's caf/openssl/unpublish.hpp (0.17.6) does not compile: a TLS port closes with the
    // actor system instead, a moment later.
    if (!a.tls) (void)a.system.middleman().unpublish(a.gate, port_);
    caf::anon_send_exit(a.gate, caf::exit_reason::user_shutdown);
  }
  if (a.worker) caf::anon_send_exit(a.worker, caf::exit_reason::user_shutdown);
  a.system.await_all_actors_done();
}

result<std::unique_ptr<worker_node>> worker_node::start(worker_node_options opt) {
  // Before the model loads: a port open to anyone, or credentials that cannot work, are told first.
  if (auto st = opt.listen.check_reach(); !st) return st.error();
  const std::string& creds = opt.listen.credentials;
  if (!creds.empty()) {
    if (auto st = check_worker_credentials(credentials_in(creds)); !st) return st.error();
  }
  std::unique_ptr<worker_node> n(new worker_node(creds));
  auto& a = *n->actors_;
  auto pool = std::make_shared<std::weak_ptr<const kv_store>>();
  a.worker = spawn_worker(a.system, {opt.cpus, opt.threads, std::move(opt.make_backend), nullptr, pool});
  auto info = await_worker(a.system, a.worker);
  if (!info) return info.error();
  n->info_ = *info;
  auto log = opt.log ? std::move(opt.log) : [](const std::string&) {};
  a.gate = a.system.spawn(gate, a.worker, std::move(*pool), std::move(*info), std::move(opt.hello),
                          std::move(log));
  const std::string& host = opt.listen.host;
  auto port =
      publish_actor(a.system, a.gate, opt.listen.port, host.empty() ? nullptr : host.c_str(), !creds.empty());
  if (!port)
    return error{errc::io,
                 "worker: cannot listen on " + opt.listen.text() + ": " + error_text(a.system, port.error())};
  n->port_ = *port;
  return n;
}

namespace {

// One join: the worker's info, or its refusal (errc::invalid_argument) with its words.
result<worker_info> ask_join(caf::actor_system& sys, const caf::actor& remote, const worker_endpoint& at,
                             const join_hello& hello) {
  result<worker_info> info = error{errc::io, "worker " + at.text() + ": no answer to the join"};
  {
    caf::scoped_actor self{sys};
    self->request(remote, join_timeout, join_atom::value, hello)
        .receive([&](worker_info& i) { info = std::move(i); },
                 [&](caf::error& err) {
                   info = error{errc::invalid_argument, "worker " + at.text() + ": " + error_text(sys, err)};
                 });
  }
  caf::logger::set_current_actor_system(nullptr);  // as await_worker does
  return info;
}

}  // namespace

result<std::pair<worker_actor, worker_info>> join_remote_worker(caf::actor_system& sys,
                                                                const worker_endpoint& at,
                                                                const join_hello& hello) {
  // Untyped (messages.hpp): the join, whose layout never changes, tells a worker of another build.
  auto remote = connect_actor(sys, at.host, at.port, !at.credentials.empty());
  for (int tried = 1; tried < connect_tries && !remote && remote.error() == caf::sec::connection_timeout;
       ++tried)
    remote = connect_actor(sys, at.host, at.port, !at.credentials.empty());
  if (!remote)
    return error{errc::io, "worker " + at.text() + ": cannot connect: " + error_text(sys, remote.error())};
  const std::string busy_refusal = "worker " + at.text() + ": " + std::string(busy);
  const auto give_up = std::chrono::steady_clock::now() + busy_retry_for;
  auto info = ask_join(sys, *remote, at, hello);
  while (!info && info.error().message.starts_with(busy_refusal) &&
         std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(busy_retry_every);
    info = ask_join(sys, *remote, at, hello);
  }
  if (!info) return info.error();
  return std::pair{caf::actor_cast<worker_actor>(*remote), std::move(*info)};
}

status<> attach_remote_worker(caf::actor_system& sys, const worker_actor& w, const worker_endpoint& at,
                              const caf::actor& scheduler) {
  status<> out = error{errc::io, "worker " + at.text() + ": no answer to the attach"};
  {
    caf::scoped_actor self{sys};
    self->request(caf::actor_cast<caf::actor>(w), join_timeout, join_atom::value, scheduler)
        .receive([&](bool) { out = {}; },
                 [&](caf::error& err) {
                   out = error{errc::io, "worker " + at.text() + ": " + error_text(sys, err)};
                 });
  }
  caf::logger::set_current_actor_system(nullptr);
  return out;
}

}  // namespace hearth
