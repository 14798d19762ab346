#pragma once
// The gateway: wire protocol v1 (docs/protocol.md) on a ZeroMQ ROUTER socket, in front of the
// in-process engine. One thread owns every socket (ZeroMQ sockets are single-threaded) and waits
// in zmq::poll on three things at once: the ROUTER, the ZAP handler's REP socket (every
// handshake, CURVE or not, is answered there), and an eventfd that wakes it when the engine's
// events (or a task from another thread) arrive. Long prompts are tokenized on a thread of
// their own, so one client's megabytes never hold up another's reply.
//
//   clients ──DEALER──► ROUTER ─┐                          ┌─► engine::submit / cancel
//   libzmq handshake ─► ZAP REP ─┼─► gateway thread (poll) ─┤
//   engine events ─► event sink ─► inbox + eventfd ─┘        └─► replies to the peer's routing id
//
// Why the shape, how a reply reaches only the connection that asked, the disconnect rules and
// the back-pressure rule: docs/architecture.md, "Gateway".

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "server/endpoint.hpp"  // is_local_endpoint, for callers of the gateway
#include "server/front_end.hpp"
#include "server/request_path.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth {
class engine;
}

namespace hearth::server {

//! What a reload changes at the gateway.
struct gateway_config {
  std::vector<tenant_config> tenants;  //!< CURVE: who may connect (key -> tenant), and admins
  std::string policy;                  //!< the policy now in force, for `stats`
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
  std::string policy = "household";  //!< the policy in force, for `stats`
  //! The `admin` `reload` action: re-reads the configuration and applies it to the engine;
  //! returns what the gateway then applies itself (as reconfigure does). Runs on the gateway
  //! thread. Empty: reload is refused.
  std::function<result<gateway_config>()> reload = {};
  //! One line per event that matters (a lost connection, a reload); empty: silent.
  std::function<void(const std::string&)> log = {};
};

class gateway final : public front_end {
 public:
  //! Binds (the ZAP handler first), then starts the thread. Fails for a non-local endpoint in
  //! development mode, a bad key, an endpoint check_bindable refuses, or an endpoint that cannot
  //! be bound. If the engine fails, every request in flight ends with `internal` and so does
  //! every later one.
  static result<std::unique_ptr<gateway>> start(engine& e, gateway_options opt);
  //! stop(0) if not stopped, then closes the socket (terminal messages still queued get the
  //! last stop's grace to leave).
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  //! The endpoint bound (a `:*` port resolved).
  const std::string& endpoint() const;
  //! The server's public key (Z85); empty in development mode.
  const std::string& public_key() const;
  //! New tenants (keys, admin flags) and policy name, applied on the gateway thread. A
  //! connection whose key is no longer listed for its tenant is revoked: its requests end with
  //! `unauthorized`, and so does every message it sends from then on.
  void reconfigure(gateway_config c);
  // front_end. After stop, until the gateway is destroyed, it still answers: every request with
  // `shutting_down`, so a client that connects while the server stops learns so at once.
  void drain() override;
  bool busy() const override;
  void stop(std::chrono::milliseconds grace) override;

 private:
  struct impl;
  explicit gateway(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth::server
