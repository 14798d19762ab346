#pragma once
// The C++ client of wire protocol v1 (docs/protocol.md): one ZeroMQ DEALER connection to
// `hearth serve`, many requests in flight on it, each read as a stream of tokens.
//
//   auto c = client::connect({.endpoint = "tcp://127.0.0.1:5555", .tenant = "voice"});
//   auto done = (*c)->generate({.prompt = "Lights off?", .max_tokens = 32},
//                              [](const token& t) { std::cout << t.text << std::flush; return true; });
//
// or, as an iterator:  auto s = (*c)->start(params); while (auto t = s->next()) ...; s->result().
//
// Threads: a client and its streams belong to one thread at a time (ZeroMQ sockets are
// single-threaded); use one client per thread. Several streams of one client may be read in any
// order from that thread: reading one buffers the messages of the others. To serve many streams
// from one thread without blocking on any: client::wait(), then next() on the streams ready().
// Timeouts: connect (the server must answer a ping), replies, a stream's first token and the
// gap between its messages. A stream that times out is cancelled on the server.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "clients/cpp/keys.hpp"
#include "clients/cpp/replies.hpp"
#include "common/result.hpp"

namespace hearth::client {

struct options {
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::string server_key = {};  //!< the server's public key (Z85); empty: development mode
  key_pair keys = {};           //!< CURVE: this client's pair, whose public key the tenants file lists
  std::string tenant = {};      //!< development mode: sent as `tenant` with generate and stats
  std::chrono::milliseconds connect_timeout{5000};  //!< connect(): the server answers a ping within it
  std::chrono::milliseconds reply_timeout{10000};   //!< ping, stats, models, admin
};

struct chat_turn {
  std::string role;  //!< system, user or assistant
  std::string content;
};

//! A `generate` request (protocol.md's fields and defaults) and its timeouts (0 = none).
struct generate_params {
  std::string prompt = {};
  std::vector<chat_turn> messages = {};  //!< sent instead of prompt when not empty
  uint32_t max_tokens = 256;
  double temperature = 1.0;
  uint32_t top_k = 0;
  double top_p = 1.0;
  double min_p = 0.0;
  double repetition_penalty = 1.0;
  uint32_t repeat_last_n = 64;
  uint64_t seed = 0;
  std::vector<std::string> stop = {};
  bool stream = true;
  bool ignore_eos = false;  //!< run to max_tokens: the model's end-of-generation tokens are never drawn
  std::string tenant = {};  //!< development mode: this request's tenant instead of options.tenant
  //! Start to the first token (with stream = false, to the end); time in the queue counts.
  std::chrono::milliseconds first_token_timeout{0};
  std::chrono::milliseconds idle_timeout{0};  //!< from one token to the next
};

class client;

//! One generation in flight. Destroying it before its end cancels it on the server.
class stream {
 public:
  stream(stream&&) noexcept;
  stream& operator=(stream&&) = delete;
  ~stream();

  //! The next token; nullopt once the stream has ended (then see result()).
  std::optional<token> next();
  //! After next() gave nullopt: the completion, or why it failed.
  const outcome<completion>& result() const { return gen_.result(); }
  bool ended() const { return gen_.ended(); }
  //! Whether next() would return without waiting: a message is buffered, the stream has ended,
  //! or a timeout has passed.
  bool ready() const;
  //! Whether the server admitted it (an `accepted` came); an error before that is a refusal.
  bool accepted() const { return gen_.accepted(); }
  //! Asks the server to end it; next() then drains to its terminal message (`cancelled`).
  void cancel();
  const std::string& id() const { return id_; }

 private:
  friend class client;
  stream(client* c, std::string id, const generate_params& p);

  client* c_;
  std::string id_;
  generation gen_;  // what the replies did; the stream adds the socket
};

class client {
 public:
  //! Connects and checks that the server answers a ping within connect_timeout. Each failure
  //! is told at once, as libzmq's socket monitor reports it: a refused connection (no server
  //! there) in `unreachable`, a CURVE key the server's tenants do not list in `unauthorized`, a
  //! failed handshake (a wrong server key, CURVE against a development-mode server or the other
  //! way round) in `handshake`; a host that never answers in `timeout`; an endpoint without a
  //! scheme in `bad_request` ("did you mean tcp://...?").
  static outcome<std::unique_ptr<client>> connect(options opt);
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  //! Sends a generate request; read it with the stream.
  outcome<stream> start(const generate_params& p);
  //! Generates to the end, calling on_token for each token; on_token returning false cancels.
  outcome<completion> generate(const generate_params& p,
                               const std::function<bool(const token&)>& on_token = {});
  //! Waits up to `timeout` for messages and sorts whatever arrives into the streams' inboxes;
  //! returns whether any message arrived. Then next() on each stream that is ready().
  bool wait(std::chrono::milliseconds timeout);
  //! As wait(timeout), and returns as soon as `fd`, a descriptor of the caller's (an eventfd that
  //! another thread writes, say), is readable too: a thread that also takes work from others can
  //! sleep until either comes instead of waking at intervals. The caller reads `fd` itself.
  bool wait(std::chrono::milliseconds timeout, int fd);
  //! Cancels the request `id` sent on this connection (protocol `cancel`; no reply).
  status<error> cancel(const std::string& id);

  //! The `pong`: protocol number, server name and the tenant the server sees.
  outcome<nlohmann::json> ping();
  //! The engine's gauges and this tenant's counters; `all`: every tenant's too, with its
  //! requests waiting and running (admin tenants only).
  outcome<nlohmann::json> stats(bool all = false);
  outcome<nlohmann::json> models();
  //! action "set_policy" (with policy) or "reload".
  outcome<nlohmann::json> admin(const std::string& action, const std::string& policy = {});

  const options& settings() const { return opt_; }

 private:
  friend class stream;
  explicit client(options opt);
  //! Sends one message, waiting until `deadline` for a connection to send it on (`timeout`).
  status<error> send(const nlohmann::json& msg, std::chrono::steady_clock::time_point deadline);
  //! Waits until messages arrive (or `deadline`) and sorts them into their inboxes; whether any came.
  bool receive(std::chrono::steady_clock::time_point deadline, int fd = -1);
  //! Delivers one reply to the inbox of the request it is about, or drops it.
  void dispatch(reply r);
  outcome<nlohmann::json> call(nlohmann::json msg);
  std::string next_id();
  //! Stop delivering `id`'s messages; forget it at its terminal message.
  void abandon(const std::string& id);

  options opt_;
  zmq::context_t ctx_{1};
  zmq::socket_t socket_{ctx_, zmq::socket_type::dealer};
  uint64_t counter_ = 0;
  std::map<std::string, std::deque<reply>> inbox_;  // by request id, while someone waits
  std::set<std::string> abandoned_;
};

}  // namespace hearth::client
