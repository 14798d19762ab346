#pragma once
// The bench's target over the HTTP gateway (docs/http.md): OpenAI's POST /v1/completions with a
// raw prompt, streamed as server-sent events, through cpp-httplib's client. Each request is one
// blocking HTTP exchange, so it runs on a thread of its own: a pool that grows to the most
// requests in flight at once and reuses its threads (and their keep-alive connections), so an
// arrival never waits for another request's stream. Its tenant is the key it sends
// (`Authorization: Bearer KEY`, the class's key), or the server's anonymous tenant.
//
// Why /v1/completions: it is what serving benchmarks drive (vLLM's and SGLang's), it takes the
// prompt as is (no chat template), and two extensions the gateway accepts give the figures the
// ZeroMQ target gets: `ignore_eos` (vLLM's), and the server's `timings` on the usage chunk
// (`stream_options.include_usage`), as llama.cpp's server sends them. The gauges and the
// preemptions come from GET /metrics (Prometheus text).

#include <map>
#include <memory>
#include <string>

#include "bench/household/target.hpp"
#include "common/result.hpp"

namespace hearth::household {

struct http_target_options {
  std::string endpoint;                     //!< http://HOST:PORT
  std::map<std::string, std::string> keys;  //!< a class's HTTP key; a class without one sends none
  //! The key GET /metrics is read with: an admin tenant's once the server has HTTP keys (else
  //! /metrics is open); empty: none sent.
  std::string metrics_key = {};
};

class http_target final : public bench_target {
 public:
  //! Asks GET /v1/models for the served model's name (every request names it): fails when
  //! nothing answers there.
  static result<std::unique_ptr<http_target>> connect(http_target_options opt);
  //! Ends every exchange still open (the server cancels their requests) and joins the pool.
  ~http_target() override;

  void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) override;
  //! From GET /metrics: the queue and the KV blocks; a sample it cannot read (refused, no
  //! answer) reads as an idle server, as the ZeroMQ target's does.
  target_gauges gauges() override;
  //! From GET /metrics: the preemptions (its step histograms' buckets are coarser than the
  //! wire protocol's per-step figures: those come over ZeroMQ only).
  server_figures figures() override;

 private:
  struct impl;
  explicit http_target(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

//! Reads `CLASS KEY` lines (blank lines and `#` comments skipped) into a class -> key map; errors
//! name the file and line.
result<std::map<std::string, std::string>> read_http_keys(const std::string& path);

}  // namespace hearth::household
