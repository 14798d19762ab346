#pragma once
// The bench's target over wire protocol v1 through the C++ client (clients/cpp/client.hpp): the
// path a household service takes. One I/O thread owns the client that carries every request
// (ZeroMQ sockets are single-threaded) and reads all streams at once; submit() only hands it
// requests, so arrivals never wait on the network. A second client, owned by the gauge path,
// asks `stats` for gauges() and figures().

#include <memory>

#include "bench/household/target.hpp"
#include "clients/cpp/client.hpp"

namespace hearth::household {

class zmq_target final : public bench_target {
 public:
  //! Connects both clients. Each request names its class as `tenant` unless `opt` is CURVE
  //! (then the server gives every request the key's tenant).
  static result<std::unique_ptr<zmq_target>> connect(const client::options& opt);
  //! Stops the I/O thread; requests still in flight are cancelled on the server.
  ~zmq_target() override;

  void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) override;
  target_gauges gauges() override;
  server_figures figures() override;

 private:
  struct impl;
  explicit zmq_target(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth::household
