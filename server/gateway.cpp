#include "server/gateway.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>
#include <thread>
#include <variant>

#include <caf/all.hpp>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "actors/engine.hpp"
#include "model/chat_prompt.hpp"
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
// network takes it: only a peer that stopped reading fills it.
constexpr int send_hwm = 10000;
// Messages read from the ROUTER per wake-up, so engine events interleave with a flood of input.
constexpr int reads_per_turn = 256;
// A message has 2 frames after the routing id; frames beyond a few are read and dropped.
constexpr size_t frames_kept = 4;
constexpr std::string_view dev_tenant = "default";

// Engine events and tasks for the gateway thread, from any thread. The eventfd is written when
// the inbox goes from empty to non-empty, so a burst of tokens costs one wake-up.
class inbox {
 public:
  inbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~inbox() { ::close(fd_); }
  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  void push(std::variant<request_event, std::function<void()>> item) {
    bool was_empty;
    {
      std::lock_guard lock(m_);
      was_empty = items_.empty();
      items_.push_back(std::move(item));
    }
    if (was_empty) {
      const uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd_, &one, sizeof one);  // fails only if the counter is full: already awake
    }
  }

  std::deque<std::variant<request_event, std::function<void()>>> take() {
    uint64_t count;
    [[maybe_unused]] auto n = ::read(fd_, &count, sizeof count);  // EAGAIN when nothing was written
    std::lock_guard lock(m_);
    return std::exchange(items_, {});
  }

 private:
  int fd_;
  std::mutex m_;
  std::deque<std::variant<request_event, std::function<void()>>> items_;
};

// The engine's sink: hands every request_event to the gateway thread.
caf::behavior sink_actor(caf::event_based_actor*, std::shared_ptr<inbox> box) {
  return {[box](request_event& e) { box->push(std::move(e)); }};
}

std::string z85_encode(const uint8_t* key32) {
  char text[41];
  zmq_z85_encode(text, key32, 32);
  return text;
}

}  // namespace

struct gateway::impl {
  engine& eng;
  gateway_options opt;
  bool curve = false;
  zmq::context_t ctx{1};
  zmq::socket_t router{ctx, zmq::socket_type::router};
  zmq::socket_t zap;
  std::shared_ptr<inbox> box = std::make_shared<inbox>();
  caf::actor sink;
  std::thread thread;
  std::string endpoint, public_key;
  std::atomic<bool> draining{false};

  // Gateway thread only.
  request_table table;
  std::map<std::string, std::string> key_to_tenant;  // Z85 public key -> tenant name
  bool stopping = false;
  clock_type::time_point deadline;

  impl(engine& e, gateway_options o) : eng(e), opt(std::move(o)), curve(!opt.secret_key.empty()) {}

  void log(const std::string& line) const {
    if (opt.log) opt.log(line);
  }

  void index_keys() {
    key_to_tenant.clear();
    for (const auto& t : opt.tenants)
      if (!t.key.empty()) key_to_tenant[t.key] = t.name;
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
      if (curve) {
        // The ZAP handler is bound before the server socket: libzmq accepts any CURVE client
        // when no handler answers, so serving must never start without it (fail closed).
        zap = zmq::socket_t(ctx, zmq::socket_type::rep);
        zap.bind(zap_endpoint);
        uint8_t secret[32];
        if (opt.secret_key.size() != 40 || !zmq_z85_decode(secret, opt.secret_key.c_str()))
          return error{errc::invalid_argument, "server secret key: not a Z85 key of 40 characters"};
        char pub_text[41];
        if (zmq_curve_public(pub_text, opt.secret_key.c_str()) != 0)
          return error{errc::unsupported, "server secret key: libzmq has no CURVE support"};
        public_key = pub_text;
        router.set(zmq::sockopt::curve_server, 1);
        router.set(zmq::sockopt::curve_secretkey, zmq::const_buffer(secret, sizeof secret));
        router.set(zmq::sockopt::zap_domain, "hearth");
      } else if (!is_local_endpoint(opt.endpoint)) {
        return error{errc::invalid_argument,
                     "endpoint " + opt.endpoint +
                         ": without a server key (development mode) only loopback tcp:// or ipc:// endpoints are allowed"};
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
    for (request_id rid : ids) eng.cancel(rid);
    log("gateway: a connection " + std::string(why) + "; cancelled its " + std::to_string(ids.size()) + " request(s)");
  }

  void send_error(const std::string& peer, const std::optional<std::string>& id, std::string_view code,
                  std::string_view message, uint64_t retry_after_ms = 0) {
    send(peer, wire::encode_error(id, code, message, retry_after_ms));
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
      case event_kind::accepted: send(peer, wire::encode_accepted(f->id, f->prompt_tokens)); return;
      case event_kind::token:
        if (f->stream) send(peer, wire::encode_token(f->id, e.index, e.token, e.text));
        else f->text += e.text;
        return;
      case event_kind::done:
        send(peer, wire::encode_done(f->id, to_string(e.finish), e.use, e.time, e.preemptions,
                                     f->stream ? nullptr : &f->text));
        break;
      case event_kind::cancelled:
        send_error(peer, f->id, wire::code::cancelled, e.message.empty() ? "cancelled" : e.message);
        break;
      case event_kind::rejected:
      case event_kind::error: {
        const std::string_view code = e.reason == reject_reason::none ? wire::code::internal : to_string(e.reason);
        send_error(peer, f->id, code, e.message, e.retry_after_ms);
        break;
      }
    }
    table.finish(e.id);
  }

  void drain_inbox() {
    for (auto& item : box->take()) {
      if (auto* e = std::get_if<request_event>(&item)) on_event(*e);
      else std::get<std::function<void()>>(item)();
    }
  }

  // ---- ZAP (CURVE handshakes, RFC 27) ----

  void answer_zap() {
    std::vector<zmq::message_t> req;
    while (zmq::recv_multipart(zap, std::back_inserter(req), zmq::recv_flags::dontwait)) {
      // [version, request id, domain, address, routing id, mechanism, credentials...]
      std::string status = "400", text = "unknown key", user;
      if (req.size() >= 7 && req[0].to_string_view() == "1.0" && req[5].to_string_view() == "CURVE" && req[6].size() == 32) {
        const auto it = key_to_tenant.find(z85_encode(req[6].data<uint8_t>()));
        if (it != key_to_tenant.end()) status = "200", text = "OK", user = it->second;
      }
      const std::string version = "1.0", request_id = req.size() > 1 ? req[1].to_string() : std::string();
      std::array<zmq::const_buffer, 6> reply = {zmq::buffer(version), zmq::buffer(request_id), zmq::buffer(status),
                                                zmq::buffer(text),    zmq::buffer(user),       zmq::const_buffer()};
      zmq::send_multipart(zap, reply);
      req.clear();
    }
  }

  // ---- client messages ----

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
    std::optional<std::string> tenant;  // the authenticated tenant (CURVE)
    if (curve) {
      const char* user = frames.size() > 1 ? zmq_msg_gets(frames[1].handle(), "User-Id") : nullptr;
      if (!user) return;  // cannot happen after a ZAP handshake; nothing to trust, nothing to answer
      tenant = user;
      // A routing id reused by another tenant means its old connection is gone.
      if (auto known = table.tenant_of(peer); known && *known != *tenant) peer_lost(peer, "was replaced");
    }
    std::vector<std::string_view> body;
    for (size_t i = 1; i < frames.size(); ++i) body.push_back(frames[i].to_string_view());
    auto msg = wire::parse_message(body, {static_cast<uint32_t>(eng.tok().n_vocab())});
    if (!msg) return send_error(peer, msg.error().id, wire::code::bad_request, msg.error().message);
    std::visit([&](auto& m) { handle(peer, tenant, m); }, *msg);
  }

  void handle(const std::string& peer, const std::optional<std::string>& auth, wire::generate_request& g) {
    if (draining) return send_error(peer, g.id, wire::code::shutting_down, "the server is stopping");
    if (auth && g.tenant && *g.tenant != *auth)
      return send_error(peer, g.id, wire::code::unauthorized, "field 'tenant' is not the authenticated tenant");
    if (table.lookup(peer, g.id))
      return send_error(peer, g.id, wire::code::bad_request, "field 'id': a request with this id is in flight");
    request r;
    r.tenant = auth ? *auth : g.tenant.value_or(std::string(dev_tenant));
    r.prompt = g.prompt ? eng.tok().encode(*g.prompt, {.add_bos = true, .parse_special = false})
                        : encode_chat(eng.tok(), g.messages);
    if (r.prompt.empty()) return send_error(peer, g.id, wire::code::bad_request, "field 'prompt' gives no tokens");
    r.max_tokens = g.max_tokens;
    r.sampling = g.sampling;
    r.stop = std::move(g.stop);
    if (const tenant_config* t = tenant_config_of(r.tenant)) r.share_prefix = t->share_prefix;
    const uint32_t n_prompt = static_cast<uint32_t>(r.prompt.size());
    const request_id rid = eng.submit(std::move(r), sink);
    table.add(rid, {peer, g.id, n_prompt, g.stream}, auth.value_or(""), clock_type::now());
  }

  void handle(const std::string& peer, const std::optional<std::string>&, wire::cancel_request& c) {
    if (auto rid = table.lookup(peer, c.id)) eng.cancel(*rid);
  }

  void handle(const std::string& peer, const std::optional<std::string>& auth, wire::ping_request& p) {
    send(peer, wire::encode(pong_reply(p.id, auth)));
  }

  void handle(const std::string& peer, const std::optional<std::string>& auth, wire::stats_request& s) {
    if (auth && s.tenant && *s.tenant != *auth)
      return send_error(peer, s.id, wire::code::unauthorized, "field 'tenant' is not the authenticated tenant");
    metrics_snapshot m = eng.metrics();
    m.gauges = eng.gauges();  // the scheduler's own, current even between steps
    const std::string tenant = auth ? *auth : s.tenant.value_or(std::string(dev_tenant));
    send(peer, wire::encode(stats_reply(s.id, m, tenant, eng.config(), opt.policy)));
  }

  void handle(const std::string& peer, const std::optional<std::string>&, wire::models_request& m) {
    send(peer, wire::encode(models_reply(m.id, opt.model)));
  }

  void handle(const std::string& peer, const std::optional<std::string>& auth, wire::admin_request& a) {
    if (auth) {
      const tenant_config* t = tenant_config_of(*auth);
      if (!t || !t->admin)
        return send_error(peer, a.id, wire::code::unauthorized, "tenant '" + *auth + "' is not an admin");
    }
    if (a.action == "set_policy") {
      if (auto st = eng.set_policy(a.policy); !st)
        return send_error(peer, a.id, wire::code::bad_request, "field 'policy': " + st.error().message);
      opt.policy = a.policy;
    } else {
      if (!opt.reload) return send_error(peer, a.id, wire::code::bad_request, "no configuration file to reload");
      auto policy = opt.reload();
      if (!policy) return send_error(peer, a.id, wire::code::bad_request, policy.error().message);
      opt.policy = *policy;
    }
    send(peer, wire::encode({{"type", "admin"}, {"id", a.id}, {"ok", true}, {"policy", opt.policy}}));
  }

  // ---- the loop ----

  void send_heartbeats() {
    const auto interval = std::chrono::milliseconds(opt.heartbeat_ms);
    static const std::string beat = wire::encode_heartbeat();
    for (const auto& peer : table.idle_peers(clock_type::now(), interval)) send(peer, beat);
  }

  void run() {
    std::vector<zmq::pollitem_t> items = {{router.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, box->fd(), ZMQ_POLLIN, 0}};
    if (curve) items.push_back({zap.handle(), 0, ZMQ_POLLIN, 0});
    // Woken often enough to send heartbeats on time; unbounded when nothing is in flight.
    const long beat_ms = std::max<long>(10, opt.heartbeat_ms / 4);
    while (!(stopping && (table.empty() || clock_type::now() >= deadline))) {
      const long timeout = stopping ? 20 : table.empty() ? -1 : beat_ms;
      zmq::poll(items, std::chrono::milliseconds(timeout));
      drain_inbox();
      if (curve && (items[2].revents & ZMQ_POLLIN)) answer_zap();
      if (items[0].revents & ZMQ_POLLIN) read_router();
      send_heartbeats();
    }
  }
};

gateway::gateway(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<gateway>> gateway::start(engine& e, gateway_options opt) {
  auto p = std::make_unique<impl>(e, std::move(opt));
  if (!p->box->ok()) return error{errc::io, "gateway: cannot create an eventfd"};
  p->index_keys();
  if (auto st = p->bind(); !st) return st.error();
  p->sink = e.system().spawn(sink_actor, p->box);
  impl* raw = p.get();
  p->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<gateway>(new gateway(std::move(p)));
}

gateway::~gateway() { stop(std::chrono::milliseconds(0)); }

const std::string& gateway::endpoint() const { return impl_->endpoint; }
const std::string& gateway::public_key() const { return impl_->public_key; }

void gateway::reconfigure(std::vector<tenant_config> tenants, std::string policy) {
  impl* p = impl_.get();
  impl_->box->push(std::function<void()>([p, t = std::move(tenants), pol = std::move(policy)]() mutable {
    p->opt.tenants = std::move(t);
    p->opt.policy = std::move(pol);
    p->index_keys();
  }));
}

void gateway::drain() { impl_->draining = true; }

void gateway::stop(std::chrono::milliseconds grace) {
  if (!impl_->thread.joinable()) return;
  drain();
  impl* p = impl_.get();
  impl_->box->push(std::function<void()>([p, grace] {
    p->stopping = true;
    p->deadline = clock_type::now() + grace;
  }));
  impl_->thread.join();
  // Terminal messages still queued get up to `grace` to leave.
  impl_->router.set(zmq::sockopt::linger, static_cast<int>(grace.count()));
  impl_->router.close();
  if (impl_->curve) impl_->zap.close();
  caf::anon_send_exit(impl_->sink, caf::exit_reason::user_shutdown);
}

}  // namespace hearth::server
