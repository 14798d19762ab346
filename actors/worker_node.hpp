#pragma once
// `hearth worker`: a worker in a process of its own, for a server on another machine. It loads
// the model on its backend (pinned, as an in-process worker is), then publishes it on a TCP port
// with CAF's middleman. A server joins first (actors/worker_join.hpp: same wire version, build
// and model file, or it is refused with what differs), then sends it steps as it would a local
// worker. Off loopback the channel is TLS, both ends proven (actors/worker_credentials.hpp). No
// CAF here: the CLI starts one with this face.

#include <functional>
#include <memory>
#include <string>

#include "actors/worker_info.hpp"
#include "actors/worker_join.hpp"
#include "core/config.hpp"

namespace hearth {

struct worker_node_options {
  worker_endpoint listen;  //!< host "" = every address, port 0 = any free port
  std::string cpus;        //!< cpuset to pin to; "" = not pinned
  unsigned threads = 0;    //!< kernel threads; 0 = one per cpu of the set
  backend_factory make_backend;
  join_hello hello;                                  //!< what a joining server must match
  std::function<void(const std::string&)> log = {};  //!< one line per join, refusal, departure
};

class worker_node {
 public:
  //! Loads the backend, then listens. The worker's error when pinning or loading failed;
  //! errc::io when the port cannot be opened.
  static result<std::unique_ptr<worker_node>> start(worker_node_options opt);
  //! Stops listening and stops the worker.
  ~worker_node();
  worker_node(const worker_node&) = delete;
  worker_node& operator=(const worker_node&) = delete;

  uint16_t port() const { return port_; }
  const worker_info& info() const { return info_; }

 private:
  struct actors;
  explicit worker_node(const std::string& credentials);
  std::unique_ptr<actors> actors_;
  worker_info info_;
  uint16_t port_ = 0;
};

}  // namespace hearth
