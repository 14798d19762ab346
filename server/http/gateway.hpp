#pragma once
// The HTTP gateway: Ollama's and OpenAI's APIs (docs/http.md) in front of the same in-process
// engine as the ZeroMQ gateway, with the same tenants, quotas and policies, through the same
// request path (server/request_path.hpp). cpp-httplib serves each connection on a thread of a
// fixed pool; a request's thread tokenizes its prompt, submits it, and waits on the request's
// own event channel (event_hub.hpp), fed by one event sink:
//
//   client ─► pool thread: parse, tokenize, engine::submit ─┐
//   engine ─► event sink ─► event_hub ─► the request's channel ─► pool thread writes the reply
//
// A stream holds its connection's thread from its first byte to its last (cpp-httplib writes a
// chunked reply from the thread that serves the connection), not a thread per token: the pool's
// size is the number of connections served at once; further ones wait for a free thread.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "server/front_end.hpp"
#include "server/request_path.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth {
class engine;
}

namespace hearth::http {

struct gateway_options {
  //! HOST:PORT; PORT 1-65535, or 0 or * for a free one. A non-loopback HOST needs keys (a tenant
  //! with an http_key_sha256 and no anonymous tenant) or `allow_public`.
  std::string endpoint = "127.0.0.1:11434";
  bool allow_public = false;  //!< serve a non-loopback address without keys (a trusted network)
  //! Who a request without a key is. nullopt: "default" when no tenant has an HTTP key, else
  //! nobody (401).
  std::optional<std::string> anonymous_tenant = std::nullopt;
  std::vector<tenant_config> tenants = {};  //!< their http_key_sha256: key -> tenant
  server::model_card model = {};
  //! cpp-httplib's pool: connections served at once (each stream holds one thread).
  uint32_t threads = 64;
  uint64_t max_body_bytes = 1 << 20;  //!< larger bodies are refused (413)
  //! PEM files of the server's certificate (its chain) and private key: HTTPS instead of HTTP.
  //! Both or neither. TLS says who the server is; who the client is stays the keys' business.
  std::string tls_cert_file = {}, tls_key_file = {};
  //! One line per event that matters (a client that left mid-stream); empty: silent.
  std::function<void(const std::string&)> log = {};
};

//! Whether `endpoint` (HOST:PORT) may be served under `opt`: a valid port, and loopback unless
//! keys or allow_public say otherwise. The message names the endpoint.
status<> check_http_endpoint(const gateway_options& opt);

class gateway final : public server::front_end {
 public:
  //! Binds and starts serving. Fails for an endpoint check_http_endpoint refuses or that cannot
  //! be bound. If the engine fails, every request in flight ends with an internal error (500).
  static result<std::unique_ptr<gateway>> start(engine& e, gateway_options opt);
  //! stop(0) if not stopped.
  ~gateway();
  gateway(const gateway&) = delete;
  gateway& operator=(const gateway&) = delete;

  //! HOST:PORT as bound (a free port resolved).
  const std::string& endpoint() const;
  //! http://HOST:PORT, or https:// with TLS.
  std::string url() const;
  uint16_t port() const;
  //! New tenants (their HTTP keys), from a reload; requests in flight keep their tenant.
  void reconfigure(std::vector<tenant_config> tenants);
  // server::front_end. Draining, new requests get a 503 and /ready says 503; busy while some
  // reply is not fully handed to its connection; stop also stops serving.
  void drain() override;
  bool busy() const override;
  void stop(std::chrono::milliseconds grace) override;

 private:
  struct impl;
  explicit gateway(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth::http
