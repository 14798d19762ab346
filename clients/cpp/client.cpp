#include "clients/cpp/client.hpp"

#include <zmq_addon.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>

#include "common/endpoint_mistake.hpp"

namespace hearth::client {

namespace {

using json = nlohmann::json;
using clock_type = std::chrono::steady_clock;
constexpr std::string_view marker = "hearth/1";
constexpr auto no_deadline = clock_type::time_point::max();

//! How long zmq::poll should wait for `deadline` (-1: for ever).
std::chrono::milliseconds ms_until(clock_type::time_point deadline) {
  if (deadline == no_deadline) return std::chrono::milliseconds(-1);
  const auto now = clock_type::now();
  return std::chrono::ceil<std::chrono::milliseconds>(std::max(deadline, now) - now);
}

//! zmq::poll, with a signal's interruption read as "nothing yet": the caller checks its clock
//! (and the application its signal flag) and polls again.
int poll_once(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout) {
  try {
    return zmq::poll(items.data(), items.size(), timeout);
  } catch (const zmq::error_t& e) {
    if (e.num() != EINTR) throw;
    return 0;
  }
}

// libzmq retries a refused connection for ever, quietly, and says nothing of a handshake the
// server refused; its socket monitor tells each outcome at once.
enum class first_attempt { handshaken, refused, key_refused, handshake_failed, pending };
constexpr const char* monitor_endpoint = "inproc://hearth-client-monitor";
constexpr int monitored_events = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED |
                                 ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

//! What the socket's first connection did by `deadline`, as its monitor reports it. A retry
//! counts as a refusal only before the connection was made (after a failed handshake libzmq
//! retries too).
first_attempt watch_first_attempt(zmq::socket_t& monitor, clock_type::time_point deadline) {
  bool connected = false;
  for (;;) {
    zmq::pollitem_t item{monitor.handle(), 0, ZMQ_POLLIN, 0};
    if (poll_once({&item, 1}, ms_until(deadline)) == 0) {
      if (clock_type::now() >= deadline) return first_attempt::pending;
      continue;
    }
    // An event is two frames: its number (16 bits) and value (32 bits), then the endpoint.
    zmq::message_t event, address;
    if (!monitor.recv(event, zmq::recv_flags::dontwait)) continue;
    if (event.more()) (void)monitor.recv(address);
    uint16_t number = 0;
    if (event.size() >= sizeof number) std::memcpy(&number, event.data(), sizeof number);
    switch (number) {
      case ZMQ_EVENT_CONNECTED:
        connected = true;
        break;
      case ZMQ_EVENT_CONNECT_RETRIED:
        if (!connected) return first_attempt::refused;
        break;
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        return first_attempt::handshaken;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        return first_attempt::key_refused;  // the server's ZAP handler said no
      default:                              // the server's key is not the one given, or CURVE met no CURVE
        return first_attempt::handshake_failed;
    }
  }
}

json request_json(const std::string& id, const generate_params& p, const std::string& tenant) {
  json j = {{"type", "generate"},
            {"id", id},
            {"max_tokens", p.max_tokens},
            {"temperature", p.temperature},
            {"top_k", p.top_k},
            {"top_p", p.top_p},
            {"min_p", p.min_p},
            {"repetition_penalty", p.repetition_penalty},
            {"repeat_last_n", p.repeat_last_n},
            {"seed", p.seed},
            {"stop", p.stop},
            {"stream", p.stream}};
  if (p.ignore_eos) j["ignore_eos"] = true;
  if (p.messages.empty()) {
    j["prompt"] = p.prompt;
  } else {
    json turns = json::array();
    for (const auto& m : p.messages) turns.push_back({{"role", m.role}, {"content", m.content}});
    j["messages"] = std::move(turns);
  }
  if (!tenant.empty()) j["tenant"] = tenant;
  return j;
}

template <class Option>
void set_key(zmq::socket_t& s, Option option, const std::string& z85) {
  uint8_t key[32];
  zmq_z85_decode(key, z85.c_str());
  s.set(option, zmq::const_buffer(key, sizeof key));
}

}  // namespace

// ---- stream ----

stream::stream(client* c, std::string id, const generate_params& p)
    : c_(c), id_(std::move(id)), gen_(clock_type::now(), p.first_token_timeout, p.idle_timeout) {}

stream::stream(stream&& o) noexcept
    : c_(std::exchange(o.c_, nullptr)), id_(std::move(o.id_)), gen_(std::move(o.gen_)) {}

stream::~stream() {
  if (c_ && !gen_.ended()) {
    (void)c_->cancel(id_);
    c_->abandon(id_);
  }
}

void stream::cancel() {
  if (c_ && !gen_.ended()) (void)c_->cancel(id_);
}

bool stream::ready() const {
  if (!c_ || gen_.ended()) return true;
  // `accepted` alone does not make it ready: next() would read past it and wait.
  const auto it = c_->inbox_.find(id_);
  const bool buffered =
      it != c_->inbox_.end() && std::any_of(it->second.begin(), it->second.end(), [](const reply& m) {
        return m.type == "token" || m.type == "done" || m.type == "error";
      });
  return buffered || clock_type::now() >= gen_.deadline();
}

std::optional<token> stream::next() {
  while (c_ && !gen_.ended()) {
    auto& box = c_->inbox_[id_];
    if (box.empty()) {
      const auto deadline = gen_.deadline();
      if (clock_type::now() >= deadline) {
        // Nothing in time: cancel on the server and stop listening for this id.
        (void)c_->cancel(id_);
        c_->abandon(id_);
        gen_.fail(error{"timeout",
                        gen_.streaming()
                            ? "no token for request '" + id_ + "' within its idle timeout"
                            : "no first token for request '" + id_ + "' within its first-token timeout"});
        break;
      }
      c_->receive(deadline);
      continue;
    }
    const reply msg = std::move(box.front());
    box.pop_front();
    auto t = gen_.feed(msg, clock_type::now());
    if (gen_.ended()) c_->inbox_.erase(id_);
    if (t) return t;
  }
  return std::nullopt;
}

// ---- client ----

client::client(options opt) : opt_(std::move(opt)) {}

client::~client() = default;

outcome<std::unique_ptr<client>> client::connect(options opt) {
  if (auto mistake = endpoint_mistake(opt.endpoint)) return error{"bad_request", "endpoint " + *mistake};
  if (!opt.server_key.empty() &&
      (!is_z85_key(opt.server_key) || !is_z85_key(opt.keys.public_key) || !is_z85_key(opt.keys.secret_key)))
    return error{"bad_request",
                 "CURVE needs the server's public key and this client's key pair, each 40 Z85 characters"};
  std::unique_ptr<client> c(new client(std::move(opt)));
  auto& s = c->socket_;
  const auto deadline = clock_type::now() + c->opt_.connect_timeout;
  zmq::socket_t monitor(c->ctx_, zmq::socket_type::pair);
  try {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::heartbeat_ivl, 1000);
    s.set(zmq::sockopt::heartbeat_timeout, 5000);
    if (!c->opt_.server_key.empty()) {
      set_key(s, zmq::sockopt::curve_serverkey, c->opt_.server_key);
      set_key(s, zmq::sockopt::curve_publickey, c->opt_.keys.public_key);
      set_key(s, zmq::sockopt::curve_secretkey, c->opt_.keys.secret_key);
    }
    if (zmq_socket_monitor(s.handle(), monitor_endpoint, monitored_events) != 0) throw zmq::error_t();
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(monitor_endpoint);
    s.connect(c->opt_.endpoint);
  } catch (const zmq::error_t& e) {
    return error{"transport", "cannot connect to " + c->opt_.endpoint + ": " + e.what()};
  }
  const first_attempt attempt = watch_first_attempt(monitor, deadline);
  (void)zmq_socket_monitor(s.handle(), nullptr, 0);
  const std::string& ep = c->opt_.endpoint;
  if (attempt == first_attempt::refused) return error{"unreachable", "no server at " + ep};
  if (attempt == first_attempt::key_refused)
    return error{"unauthorized", std::string("the server at ")
                                     .append(ep)
                                     .append(" refused this client's key: its tenants list no ")
                                     .append(c->opt_.keys.public_key)};
  if (attempt == first_attempt::handshake_failed)
    return error{"handshake",
                 std::string("the handshake with ")
                     .append(ep)
                     .append(" failed: is the server key its public one, and does the server use "
                             "CURVE? (a development-mode server takes no keys, a CURVE server needs them)")};
  const error silent{"timeout", "no answer from " + c->opt_.endpoint + " within " +
                                    std::to_string(c->opt_.connect_timeout.count()) +
                                    " ms (is a `hearth serve` listening there?)"};
  if (attempt == first_attempt::pending) return silent;
  // The ping has what is left of connect_timeout.
  const auto reply_timeout = c->opt_.reply_timeout;
  c->opt_.reply_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
  auto pong = c->ping();
  c->opt_.reply_timeout = reply_timeout;
  if (!pong) return pong.error().code == "timeout" ? silent : pong.error();
  return c;
}

std::string client::next_id() {
  std::string id = std::to_string(++counter_);  // (not "c" + ...: g++ 12 warns falsely, -Wrestrict)
  id.insert(id.begin(), 'c');
  return id;
}

status<error> client::send(const json& msg, clock_type::time_point deadline) {
  const std::string text = msg.dump(-1, ' ', false, json::error_handler_t::replace);
  try {
    // A DEALER without a connection has nowhere to put a message, and a plain send waits for
    // one for ever: after a CURVE handshake the server refused, libzmq never reconnects.
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLOUT, 0};
    while (poll_once({&item, 1}, ms_until(deadline)) == 0)
      if (clock_type::now() >= deadline) return error{"timeout", "no connection to send on in time"};
    // Writable: both frames are taken at once (a multipart message is atomic).
    socket_.send(zmq::buffer(marker), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_.send(zmq::buffer(text), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    return error{"transport", std::string("send failed: ") + e.what()};
  }
  return {};
}

void client::dispatch(reply r) {
  if (abandoned_.count(r.id)) {
    // Forgotten at its last message: a stream's terminal one, or the one reply to a call.
    if (r.type != "accepted" && r.type != "token") abandoned_.erase(r.id);
    return;
  }
  const auto it = inbox_.find(r.id);
  if (it != inbox_.end()) it->second.push_back(std::move(r));
}

bool client::receive(clock_type::time_point deadline, int fd) {
  zmq::pollitem_t items[] = {{socket_.handle(), 0, ZMQ_POLLIN, 0}, {nullptr, fd, ZMQ_POLLIN, 0}};
  (void)poll_once(std::span(items).first(fd < 0 ? 1 : 2), ms_until(deadline));
  std::vector<zmq::message_t> frames;
  bool any = false;
  while (zmq::recv_multipart(socket_, std::back_inserter(frames), zmq::recv_flags::dontwait)) {
    any = true;
    std::vector<std::string_view> views;
    for (const auto& f : frames) views.push_back(f.to_string_view());
    if (auto r = decode_reply(views)) dispatch(std::move(*r));
    frames.clear();
  }
  return any;
}

bool client::wait(std::chrono::milliseconds timeout) {
  return receive(clock_type::now() + timeout);
}

bool client::wait(std::chrono::milliseconds timeout, int fd) {
  return receive(clock_type::now() + timeout, fd);
}

void client::abandon(const std::string& id) {
  inbox_.erase(id);
  abandoned_.insert(id);
}

outcome<stream> client::start(const generate_params& p) {
  std::string id = next_id();
  inbox_[id];  // messages for it are kept from now on
  // Sending is bounded by the first-token timeout, which counts from here.
  const auto deadline =
      p.first_token_timeout.count() > 0 ? clock_type::now() + p.first_token_timeout : no_deadline;
  if (auto st = send(request_json(id, p, p.tenant.empty() ? opt_.tenant : p.tenant), deadline); !st) {
    inbox_.erase(id);
    return st.error();
  }
  return stream(this, std::move(id), p);
}

outcome<completion> client::generate(const generate_params& p,
                                     const std::function<bool(const token&)>& on_token) {
  auto s = start(p);
  if (!s) return s.error();
  while (auto t = s->next())
    if (on_token && !on_token(*t)) s->cancel();
  return s->result();
}

status<error> client::cancel(const std::string& id) {
  // Never waits: with no connection there is nothing to cancel on the server's side.
  return send({{"type", "cancel"}, {"id", id}}, clock_type::now());
}

outcome<json> client::call(json msg) {
  const std::string id = next_id();
  msg["id"] = id;
  inbox_[id];
  const auto deadline = clock_type::now() + opt_.reply_timeout;
  if (auto st = send(msg, deadline); !st) {
    inbox_.erase(id);
    return st.error();
  }
  while (inbox_[id].empty()) {
    if (clock_type::now() >= deadline) {
      abandon(id);
      return error{"timeout", "no reply to '" + msg.value("type", std::string()) + "' in time"};
    }
    receive(deadline);
  }
  reply r = std::move(inbox_[id].front());
  inbox_.erase(id);
  // `refused` answers a message whose id was in flight: for a one-shot call, its failure too.
  if (r.type == "error" || r.type == "refused") return error_of(r.body);
  return std::move(r.body);
}

outcome<json> client::ping() {
  return call({{"type", "ping"}});
}

outcome<json> client::stats(bool all) {
  json msg = {{"type", "stats"}};
  if (!opt_.tenant.empty()) msg["tenant"] = opt_.tenant;
  if (all) msg["all"] = true;
  return call(std::move(msg));
}

outcome<json> client::models() {
  return call({{"type", "models"}});
}

outcome<json> client::admin(const std::string& action, const std::string& policy) {
  json msg = {{"type", "admin"}, {"action", action}};
  if (!policy.empty()) msg["policy"] = policy;
  return call(std::move(msg));
}

}  // namespace hearth::client
