#pragma once
// The gateway: wire protocol v1 (docs/protocol.md) on a ZeroMQ ROUTER socket, in front of the
// in-process engine. One thread owns every socket (ZeroMQ sockets are single-threaded) and waits
// in zmq::poll on three things at once: the ROUTER, the ZAP handler's REP socket (CURVE mode),
// and an eventfd that wakes it when the engine's events (or a task from another thread) arrive.
//
//   clients ──DEALER──► ROUTER ─┐                          ┌─► engine::submit / cancel
//   libzmq handshake ─► ZAP REP ─┼─► gateway thread (poll) ─┤
//   engine events ─► sink actor ─► inbox + eventfd ─┘        └─► replies to the peer's routing id
//
// Why the shape, the disconnect rules and the back-pressure rule: docs/architecture.md, "Gateway".

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "server/endpoint.hpp"  // is_local_endpoint, for callers of the gateway
#include "tenants/tenant_config.hpp"

namespace hearth {
class engine;
}

namespace hearth::server {

//! What `models` answers about the served model.
struct model_card {
  std::string name;
  std::string architecture;
  std::string chat_format;
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
};

struct gateway_options {
  std::string endpoint = "tcp://127.0.0.1:5555";
  //! The server's CURVE secret key (Z85). Empty: development mode, loopback or ipc:// only.
  std::string secret_key = {};
  uint64_t max_message_bytes = 1 << 20;
  uint32_t heartbeat_ms = 1000;
  //! CURVE: who may connect (key -> tenant) and who may send `admin`.
  std::vector<tenant_config> tenants = {};
  model_card model = {};
  std::string policy = "fcfs";  //!< the policy in force, for `stats`
  //! The `admin` `reload` action: re-reads the configuration and applies it (it calls
  //! reconfigure); returns the policy now in force. Empty: reload is refused.
  std::function<result<std::string>()> reload = {};
  //! One line per event that matters (a lost connection, a reload); empty: silent.
  std::function<void(const std::string&)> log = {};
};

class gateway {
 public:
  //! Binds (the ZAP handler first under CURVE), then starts the thread. Fails for a
  //! non-local endpoint in development mode, a bad key, an endpoint check_bindable refuses, or
  //! an endpoint that cannot be bound.
  static result<std::unique_ptr<gateway>> start(engine& e, gateway_options opt);
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  //! The endpoint bound (a `:*` port resolved).
  const std::string& endpoint() const;
  //! The server's public key (Z85); empty in development mode.
  const std::string& public_key() const;
  //! New tenants (keys, admin flags) and policy name; applied on the gateway thread. Open
  //! connections keep the tenant they authenticated as.
  void reconfigure(std::vector<tenant_config> tenants, std::string policy);
  //! From now on `generate` is refused with `shutting_down`; requests in flight continue.
  void drain();
  //! Drains, waits up to `grace` for every request in flight to send its terminal message,
  //! then closes the socket (flushing for up to `grace` more) and joins the thread.
  void stop(std::chrono::milliseconds grace);

 private:
  struct impl;
  explicit gateway(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth::server
