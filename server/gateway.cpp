#include "server/gateway.hpp"

#include <atomic>
#include <cassert>
#include <cerrno>
#include <future>
#include <thread>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "actors/engine.hpp"
#include "server/connection.hpp"
#include "server/inbox.hpp"
#include "server/job_thread.hpp"
#include "server/protocol.hpp"
#include "server/replies.hpp"
#include "server/request_table.hpp"

namespace hearth::server {

namespace {

constexpr const char* zap_endpoint = "inproc://zeromq.zap.01";
// ZMTP heartbeats: a dead TCP peer is noticed within the timeout even when nothing is sent.
constexpr int zmtp_heartbeat_ivl_ms = 1000, zmtp_heartbeat_timeout_ms = 5000;
// Messages queued to one peer before it counts as gone. A stream is at most max_tokens + 2
// messages, and the I/O thread drains this queue into the kernel's socket buffer as fast as the
// network takes it: only a peer that stopped reading fills it (and its ZMTP heartbeats, stuck
// behind the data, time out first: docs/protocol.md, "Disconnects").
constexpr int send_hwm = 10000;
// Messages read from the ROUTER per wake-up, so engine events interleave with a flood of input.
constexpr int reads_per_turn = 256;
// A message has 2 frames after the routing id; frames beyond a few are read and dropped.
constexpr size_t frames_kept = 4;
// Prompts up to this size are tokenized on the gateway thread (about 1 ms); longer ones on the
// job thread, so they never hold up another client's reply.
constexpr size_t inline_prompt_bytes = 16 << 10;
constexpr std::string_view dev_tenant = "default";

const std::string& id_of(const wire::client_message& m) {
  return std::visit([](const auto& x) -> const std::string& { return x.id; }, m);
}

}  // namespace

struct gateway::impl {
  engine& eng;
  gateway_options opt;
  bool curve = false;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  zmq::socket_t zap{ctx, zmq::socket_type::rep};
  std::shared_ptr<inbox> box = std::make_shared<inbox>();
  std::unique_ptr<event_sink> sink;
  job_thread prompts;
  std::thread thread;
  std::string endpoint, public_key;
  std::atomic<bool> draining{false};
  std::atomic<bool> busy{false};        // table.has_live(), as of the loop's last turn
  std::promise<void> detached_promise;  // set when the gateway has let go of the engine
  std::chrono::milliseconds close_linger{0};
  uint32_t n_vocab = 0, n_ctx = 0;  // the model's, for parsing (read while the engine is there)

  // Gateway thread only.
  request_table table;
  authenticator zap_auth;              // the ZAP handler's decisions
  std::optional<std::string> failure;  // the engine's, once it has failed
  bool stopping = false, detached = false, closing = false;
  clock_type::time_point deadline;

  impl(engine& e, gateway_options o)
      : eng(e), opt(std::move(o)), curve(!opt.secret_key.empty()), zap_auth(curve) {
    zap_auth.set_tenants(opt.tenants);
  }

  void log(const std::string& line) const {
    if (opt.log) opt.log(line);
  }

  const tenant_config* tenant_config_of(const std::string& name) const {
    for (const auto& t : opt.tenants)
      if (t.name == name) return &t;
    return nullptr;
  }

  status<> bind() {
    // First, so a malformed endpoint is not reported as a non-local one: libzmq would bind a
    // wrapped port, or unlink whatever holds an ipc:// path.
    if (auto st = check_bindable(opt.endpoint); !st) return st.error();
    try {
      // The ZAP handler is bound before the server socket: libzmq accepts any CURVE client
      // when no handler answers, so serving must never start without it (fail closed).
      zap.bind(zap_endpoint);
      router.set(zmq::sockopt::zap_domain, "hearth");  // every handshake, CURVE or NULL, asks ZAP
      if (curve) {
        uint8_t secret[32];
        if (opt.secret_key.size() != 40 || !zmq_z85_decode(secret, opt.secret_key.c_str()))
          return error{errc::invalid_argument, "server secret key: not a Z85 key of 40 characters"};
        char pub_text[41];
        if (zmq_curve_public(pub_text, opt.secret_key.c_str()) != 0)
          return error{errc::unsupported, "server secret key: libzmq has no CURVE support"};
        public_key = pub_text;
        router.set(zmq::sockopt::curve_server, 1);
        router.set(zmq::sockopt::curve_secretkey, zmq::const_buffer(secret, sizeof secret));
      } else if (auto st = check_development_endpoint(opt.endpoint); !st) {
        return st.error();
      }
      router.set(zmq::sockopt::router_mandatory, 1);
      router.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(opt.max_message_bytes));
      router.set(zmq::sockopt::sndhwm, send_hwm);
      router.set(zmq::sockopt::heartbeat_ivl, zmtp_heartbeat_ivl_ms);
      router.set(zmq::sockopt::heartbeat_timeout, zmtp_heartbeat_timeout_ms);
      router.set(zmq::sockopt::linger, 0);
      router.bind(opt.endpoint);
      endpoint = router.get(zmq::sockopt::last_endpoint);
    } catch (const zmq::error_t& e) {
      return error{errc::io, "cannot bind " + opt.endpoint + ": " + e.what()};
    }
    return {};
  }

  // ---- sending ----

  // Sends one message to a peer without ever blocking. A peer that is gone (EHOSTUNREACH, thanks
  // to ZMQ_ROUTER_MANDATORY) or that let send_hwm messages pile up (EAGAIN) loses its requests.
  bool send(const std::string& peer, const std::string& json_text) {
    try {
      if (!router.send(zmq::buffer(peer), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        peer_lost(peer, "stopped reading (send queue full)");
        return false;
      }
      router.send(zmq::buffer(wire::marker), zmq::send_flags::sndmore);
      router.send(zmq::buffer(json_text), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) log(std::string("gateway: send failed: ") + e.what());
      peer_lost(peer, "is gone");
      return false;
    }
    table.sent(peer, clock_type::now());
    return true;
  }

  void peer_lost(const std::string& peer, const char* why) {
    const auto ids = table.orphan(peer);
    if (ids.empty()) return;
    for (request_id rid : ids) cancel_in_engine(rid);
    log("gateway: a connection " + std::string(why) + "; cancelled its " + std::to_string(ids.size()) +
        " request(s)");
  }

  void cancel_in_engine(request_id rid) {
    const flight* f = table.find(rid);
    if (!detached && f && !f->tokenizing) eng.cancel(rid);
  }

  // Ends every request of `peer` here and now with an error of `code` (each its terminal
  // message); the engine's own events for them are dropped.
  void end_peer(const std::string& peer, std::string_view code, const std::string& message) {
    for (request_id rid : table.orphan(peer)) {
      cancel_in_engine(rid);
      if (const flight* f = table.find(rid)) send_error(peer, f->id, code, message);
    }
  }

  void end_all(std::string_view code, const std::string& message) {
    for (const auto& peer : table.peers()) end_peer(peer, code, message);
  }

  void send_error(const std::string& peer, const std::optional<std::string>& id, std::string_view code,
                  std::string_view message, uint64_t retry_after_ms = 0) {
    send(peer, wire::encode_error(id, code, message, retry_after_ms));
  }

  // Refuses one message. Its answer is `error` when that is the only thing with its id (the
  // answer ends it), but `refused` when a request with that id is in flight on the connection:
  // that request goes on, and an `error` would read as its end (docs/protocol.md).
  void refuse(const std::string& peer, const std::optional<std::string>& id, std::string_view code,
              std::string_view message) {
    if (id && table.lookup(peer, *id)) return (void)send(peer, wire::encode_refused(*id, code, message));
    send_error(peer, id, code, message);
  }

  // ---- engine events ----

  void on_event(const request_event& e) {
    flight* f = table.find(e.id);
    if (!f) return;
    if (f->orphaned) {
      if (e.terminal()) table.finish(e.id);
      return;
    }
    const std::string peer = f->peer;  // send() may orphan f's peer; f itself stays valid
    switch (e.kind) {
      case event_kind::accepted:
        send(peer, wire::encode_accepted(f->id, f->prompt_tokens));
        return;
      case event_kind::token:
        if (f->stream)
          send(peer, wire::encode_token(f->id, e.index, e.token, e.text));
        else
          f->text += e.text;
        return;
      case event_kind::done:
        send(peer, wire::encode_done(f->id, to_string(e.finish), e.use, e.time, e.preemptions,
                                     f->stream ? nullptr : &f->text));
        break;
      case event_kind::cancelled:
      case event_kind::rejected:
      case event_kind::error: {
        const client_error err = error_of(e);
        send_error(peer, f->id, err.code, err.message, err.retry_after_ms);
        break;
      }
    }
    table.finish(e.id);
  }

  void drain_inbox() {
    for (auto& item : box->take()) {
      if (auto* e = std::get_if<request_event>(&item))
        on_event(*e);
      else
        std::get<std::function<void()>>(item)();
    }
  }

  // The engine has failed for good: nothing it holds will end by itself.
  void on_engine_failure(const std::string& why) {
    failure = why;
    log("gateway: the engine failed (" + why + "); ending every request with internal");
    end_all(wire::code::internal, "the engine failed: " + why);
  }

  // ---- ZAP (every handshake, RFC 27) ----

  void answer_zap() {
    std::vector<zmq::message_t> req;
    while (zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) {
      probe_peers();
      std::vector<std::string_view> frames;
      for (const auto& f : req) frames.push_back(f.to_string_view());
      std::string status = "400", text = "unknown key", user;
      if (auto c = zap_auth.authenticate(frames))
        status = "200", text = "OK", user = to_user_id(*c);
      else
        log("gateway: refused a handshake " + zap_auth.describe_refusal(frames));
      const std::string version = "1.0", request_id = req.size() > 1 ? req[1].to_string() : std::string();
      std::array<zmq::const_buffer, 6> reply = {zmq::buffer(version), zmq::buffer(request_id),
                                                zmq::buffer(status),  zmq::buffer(text),
                                                zmq::buffer(user),    zmq::const_buffer()};
      zmq::send_multipart(zap, reply);
      req.clear();
    }
  }

  // A handshake is about to complete, and libzmq gives a routing id that is free to the next
  // connection that asks for it: a connection that left must be known gone before then, or its
  // replies would go to the newcomer. Reading ZMQ_EVENTS makes the socket take in the pipe
  // terminations the I/O thread has sent it; a heartbeat to each peer with requests in flight
  // then fails (EHOSTUNREACH) for every one that has left, and its requests are cancelled.
  void probe_peers() {
    (void)router.get(zmq::sockopt::events);
    static const std::string beat = wire::encode_heartbeat();
    for (const auto& peer : table.peers()) send(peer, beat);
  }

  // ---- client messages ----

  // libzmq gives a connection that sets no routing id a zero byte and a 32-bit count, never the
  // same twice on one socket. One a client sets itself is free to the next connection that asks
  // once the first has gone, and nothing tells this thread when that happens: the ZAP probe
  // (probe_peers) misses a connection whose end the I/O thread notices after a newcomer's
  // handshake was answered but before its pipe is attached, and the newcomer then receives the
  // replies (seen once in CI, development mode, at 0 ms). Such ids are refused instead.
  static bool generated_routing_id(const std::string& peer) { return peer.size() == 5 && peer[0] == '\0'; }

  void read_router() {
    for (int n = 0; n < reads_per_turn; ++n) {
      std::vector<zmq::message_t> frames;
      zmq::message_t part;
      if (!router.recv(part, zmq::recv_flags::dontwait)) return;
      for (bool more = true; more;) {
        more = part.more();
        if (frames.size() < frames_kept) frames.push_back(std::move(part));
        if (more) (void)router.recv(part);
      }
      on_message(frames);
    }
  }

  void on_message(std::vector<zmq::message_t>& frames) {
    const std::string peer = frames[0].to_string();
    const char* user = frames.size() > 1 ? zmq_msg_gets(frames[1].handle(), "User-Id") : nullptr;
    const std::optional<connection> conn = user ? from_user_id(user) : std::nullopt;
    if (!conn) return;  // every handshake passed our ZAP handler: cannot happen, nothing to trust
    // Requests belong to the connection that sent them, never to a later holder of its routing id.
    if (const connection* held = table.connection_of(peer); held && held->serial != conn->serial)
      peer_lost(peer, "was replaced by a new connection with its routing id");
    std::vector<std::string_view> body;
    for (size_t i = 1; i < frames.size(); ++i) body.push_back(frames[i].to_string_view());
    auto msg = wire::parse_message(body, {n_vocab});
    const std::optional<std::string> id = msg ? std::optional(id_of(*msg)) : msg.error().id;
    if (!generated_routing_id(peer))
      return refuse(peer, id, wire::code::bad_request,
                    "this connection set its own ZMQ_ROUTING_ID: another connection can take that id over "
                    "between two replies, so only the ids libzmq gives are served (leave it unset)");
    if (!zap_auth.listed(*conn))
      return refuse(
          peer, id, wire::code::unauthorized,
          "tenant '" + conn->tenant + "': this key is no longer listed (the configuration was reloaded)");
    if (!msg) return refuse(peer, id, wire::code::bad_request, msg.error().message);
    const bool cancel = std::holds_alternative<wire::cancel_request>(*msg);
    if (detached && cancel) return;  // nothing is in flight any more, and a cancel has no answer
    if (detached || (draining && !cancel))
      return refuse(peer, id, wire::code::shutting_down, "the server is stopping");
    std::visit([&](auto& m) { handle(peer, *conn, m); }, *msg);
  }

  std::optional<std::string> auth_of(const connection& c) const {
    return curve ? std::optional(c.tenant) : std::nullopt;
  }

  void handle(const std::string& peer, const connection& conn, wire::generate_request& g) {
    const auto auth = auth_of(conn);
    if (failure) return refuse(peer, g.id, wire::code::internal, "the engine failed: " + *failure);
    if (auth && g.tenant && *g.tenant != *auth)
      return refuse(peer, g.id, wire::code::unauthorized, "field 'tenant' is not the authenticated tenant");
    if (table.lookup(peer, g.id))
      return refuse(peer, g.id, wire::code::bad_request, "field 'id': a request with this id is in flight");
    request r = engine_request(g, auth ? *auth : g.tenant.value_or(std::string(dev_tenant)), opt.tenants);
    const request_id rid = eng.next_id();
    table.add(rid, {.peer = peer, .id = g.id, .stream = g.stream, .tokenizing = true}, conn,
              clock_type::now());
    if (prompt_bytes(g) <= inline_prompt_bytes)
      return submit(rid, std::move(r), tokenize_prompt(eng.tok(), g));
    prompts.post([this, rid, r = std::move(r), g = std::move(g)]() mutable {
      auto tokens = tokenize_prompt(eng.tok(), g);
      box->push(std::function<void()>([this, rid, r = std::move(r), tokens = std::move(tokens)]() mutable {
        submit(rid, std::move(r), std::move(tokens));
      }));
    });
  }

  // A request whose prompt is tokenized: to the engine, unless it ended meanwhile.
  void submit(request_id rid, request r, result<std::vector<token_id>> prompt) {
    flight* f = table.find(rid);
    assert(f && f->tokenizing && "gateway: a flight being tokenized ends only here");
    if (f->orphaned) return table.finish(rid);  // its connection left, or it was ended already
    const std::string peer = f->peer, id = f->id;
    auto end = [&](std::string_view code, const std::string& message) {
      table.finish(rid);
      send_error(peer, id, code, message);
    };
    if (f->cancel_asked) return end(wire::code::cancelled, "cancelled");
    if (draining) return end(wire::code::shutting_down, "the server is stopping");
    if (auto err = set_prompt(r, std::move(prompt), opt.model.name, n_ctx))
      return end(err->code, err->message);
    f->tokenizing = false;
    f->prompt_tokens = static_cast<uint32_t>(r.prompt.size());
    eng.submit(rid, std::move(r), *sink);
  }

  void handle(const std::string& peer, const connection&, wire::cancel_request& c) {
    const auto rid = table.lookup(peer, c.id);
    if (!rid) return;
    if (flight* f = table.find(*rid); f->tokenizing)
      f->cancel_asked = true;
    else
      eng.cancel(*rid);
  }

  bool is_admin(const connection& conn) const {
    const tenant_config* t = tenant_config_of(conn.tenant);
    return t && t->admin;
  }

  void handle(const std::string& peer, const connection& conn, wire::ping_request& p) {
    send(peer, wire::encode(pong_reply(p.id, auth_of(conn))));
  }

  void handle(const std::string& peer, const connection& conn, wire::stats_request& s) {
    const auto auth = auth_of(conn);
    if (auth && s.tenant && *s.tenant != *auth)
      return refuse(peer, s.id, wire::code::unauthorized, "field 'tenant' is not the authenticated tenant");
    if (s.all && curve && !is_admin(conn))
      return refuse(peer, s.id, wire::code::unauthorized,
                    "field 'all': tenant '" + conn.tenant +
                        "' is not an admin (every tenant's figures are for admins)");
    const std::string tenant = auth ? *auth : s.tenant.value_or(std::string(dev_tenant));
    auto m = s.all ? eng.metrics() : eng.metrics(tenant);
    auto g = eng.gauges();  // the scheduler's own, current even between steps
    if (!m || !g) return refuse(peer, s.id, wire::code::internal, (m ? g.error() : m.error()).message);
    m->gauges = *g;
    send(peer, wire::encode(stats_reply(s.id, *m, tenant, eng.config(), opt.policy, s.all)));
  }

  void handle(const std::string& peer, const connection&, wire::models_request& m) {
    send(peer, wire::encode(models_reply(m.id, opt.model)));
  }

  // Every admin action is logged, one line: who asked, what, and how it ended.
  void handle(const std::string& peer, const connection& conn, wire::admin_request& a) {
    std::string what = "gateway: admin " + a.action;
    if (a.action == "set_policy") what.append(" ").append(a.policy);
    if (curve)
      what.append(" by tenant '").append(conn.tenant).append("'");
    else
      what.append(" by a development-mode client");
    const auto refused = [&](std::string_view code, const std::string& message) {
      log(std::string(what).append(": refused (").append(message).append(")"));
      refuse(peer, a.id, code, message);
    };
    if (curve && !is_admin(conn))
      return refused(wire::code::unauthorized, "tenant '" + conn.tenant + "' is not an admin");
    const std::string policy_before = opt.policy;
    if (a.action == "set_policy") {
      if (auto st = eng.set_policy(a.policy); !st)
        return refused(wire::code::bad_request, "field 'policy': " + st.error().message);
      opt.policy = a.policy;
    } else {
      if (!opt.reload) return refused(wire::code::bad_request, "no configuration file to reload");
      auto c = opt.reload();
      if (!c) return refused(wire::code::bad_request, c.error().message);
      apply(std::move(*c));
    }
    log(what.append(": done (policy ").append(policy_before).append(" -> ").append(opt.policy).append(")"));
    send(peer, wire::encode({{"type", "admin"}, {"id", a.id}, {"ok", true}, {"policy", opt.policy}}));
  }

  // A new configuration: under CURVE, connections whose key is no longer listed for their tenant
  // lose their requests now (and get `unauthorized` for every message from now on).
  void apply(gateway_config c) {
    opt.tenants = std::move(c.tenants);
    opt.policy = std::move(c.policy);
    zap_auth.set_tenants(opt.tenants);
    for (const auto& peer : table.peers()) {
      const connection* held = table.connection_of(peer);
      if (zap_auth.listed(*held)) continue;
      const std::string tenant = held->tenant;
      end_peer(peer, wire::code::unauthorized,
               "tenant '" + tenant + "': this key is no longer listed (revoked)");
      log("gateway: revoked a connection of tenant '" + tenant + "' (its key is no longer listed)");
    }
  }

  // ---- the loop ----

  void send_heartbeats() {
    const auto interval = std::chrono::milliseconds(opt.heartbeat_ms);
    static const std::string beat = wire::encode_heartbeat();
    for (const auto& peer : table.idle_peers(clock_type::now(), interval)) send(peer, beat);
  }

  // stop(): every request has ended (or the grace is over): let go of the engine.
  void detach() {
    end_all(wire::code::shutting_down, "the server is stopping");
    detached = true;
    detached_promise.set_value();
  }

  void run() {
    std::vector<zmq::pollitem_t> items = {{router.handle(), 0, ZMQ_POLLIN, 0},
                                          {nullptr, box->fd(), ZMQ_POLLIN, 0},
                                          {zap.handle(), 0, ZMQ_POLLIN, 0}};
    // Woken often enough to send heartbeats on time; unbounded when nothing is in flight.
    const long beat_ms = std::max<long>(10, opt.heartbeat_ms / 4);
    while (!closing) {
      const bool waiting = stopping && !detached;
      const long timeout = waiting ? 20 : table.has_live() ? beat_ms : -1;
      zmq::poll(items, std::chrono::milliseconds(timeout));
      drain_inbox();
      if (items[2].revents & ZMQ_POLLIN) answer_zap();
      if (items[0].revents & ZMQ_POLLIN) read_router();
      send_heartbeats();
      busy = table.has_live();
      if (waiting && (!table.has_live() || clock_type::now() >= deadline)) detach();
    }
  }
};

gateway::gateway(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<gateway>> gateway::start(engine& e, gateway_options opt) {
  auto p = std::make_unique<impl>(e, std::move(opt));
  if (!p->box->ok()) return error{errc::io, "gateway: cannot create an eventfd"};
  p->n_vocab = static_cast<uint32_t>(e.tok().n_vocab());
  p->n_ctx = e.worker().n_ctx;
  if (auto st = p->bind(); !st) return st.error();
  p->sink = e.open_sink([box = p->box](request_event& ev) { box->push(std::move(ev)); });
  impl* raw = p.get();
  // Runs on an actor thread; the task runs on the gateway thread, while the gateway lives.
  e.on_failure([box = p->box, raw](const std::string& why) {
    box->push(std::function<void()>([raw, why] { raw->on_engine_failure(why); }));
  });
  p->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<gateway>(new gateway(std::move(p)));
}

gateway::~gateway() {
  stop(std::chrono::milliseconds(0));
  impl* p = impl_.get();
  impl_->box->push(std::function<void()>([p] { p->closing = true; }));
  impl_->thread.join();
  // Terminal messages still queued get up to the grace to leave.
  impl_->router.set(zmq::sockopt::linger, static_cast<int>(impl_->close_linger.count()));
  impl_->router.close();
  impl_->zap.close();
}

const std::string& gateway::endpoint() const {
  return impl_->endpoint;
}
const std::string& gateway::public_key() const {
  return impl_->public_key;
}

void gateway::reconfigure(gateway_config c) {
  impl* p = impl_.get();
  impl_->box->push(std::function<void()>([p, c = std::move(c)]() mutable { p->apply(std::move(c)); }));
}

void gateway::drain() {
  impl_->draining = true;
}
bool gateway::busy() const {
  return impl_->busy;
}

void gateway::stop(std::chrono::milliseconds grace) {
  if (!impl_->sink) return;
  drain();
  impl* p = impl_.get();
  p->close_linger = grace;
  auto detached = p->detached_promise.get_future();
  p->box->push(std::function<void()>([p, grace] {
    p->stopping = true;
    p->deadline = clock_type::now() + grace;
  }));
  detached.wait();
  // Nothing touches the engine from here: the prompt thread's last job is done, the sink ends.
  p->prompts.finish();
  p->sink.reset();
}

}  // namespace hearth::server
