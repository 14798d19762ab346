#pragma once
// What the bench drives: a server it sends requests to and reads gauges from. Implemented over
// ZeroMQ through the C++ client (zmq_target.hpp) and over HTTP (http_target.hpp); tests may
// implement it in process. The bench
// takes every timestamp itself, when the target reports a token or an end (client-side times).

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/household/stats.hpp"
#include "core/request.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth::household {

//! One request of a run, planned before the run starts.
struct bench_request {
  size_t index = 0;    //!< position in the schedule; what the sink is told
  std::string tenant;  //!< its class's name
  double at_s = 0;     //!< arrival, seconds from the start of the run
  std::string prompt;  //!< the text, as sent over the wire
  std::vector<token_id> prompt_tokens =
      {};  //!< the same text encoded (BOS as the model adds it), as the server counts it
  uint32_t max_tokens = 0;
};

//! How a request ended, as the server said.
struct bench_outcome {
  event_kind kind = event_kind::done;  //!< done, cancelled, rejected (before acceptance) or error
  reject_reason reason = reject_reason::none;
  std::string message = {};
  usage use = {};
  timings time = {};  //!< the server's own timings (queue, prefill, first step)
  uint32_t preemptions = 0;
};

//! The protocol's error `code` (docs/protocol.md) as the engine's reason; none for a code that
//! is not one (the client's own: timeout, transport, protocol; or unauthorized).
reject_reason reject_reason_of(std::string_view code);

//! A request that ended without `done`, as the server said: `cancelled`, an error once it was
//! `accepted`, else a refusal.
bench_outcome failed_outcome(std::string_view code, std::string_view message, bool accepted);

//! Records that `r` ended at `t` as `o` says.
void record_end(bench_record& r, double t, const bench_outcome& o);

//! The engine request a server makes of `b`, as the bench's targets send it (greedy, to its
//! max_tokens: the end of generation ignored), sharing prefixes as `tenants` lists its tenant.
request engine_request_of(const bench_request& b, const std::vector<tenant_config>& tenants);

//! Where a target reports; called from the target's threads, in order for each request.
class bench_sink {
 public:
  virtual ~bench_sink() = default;
  //! One streamed token of request `index` (the bench stamps the time).
  virtual void on_token(size_t index) = 0;
  //! The text of the token on_token is told next, from a target that streams text (HTTP): what
  //! a test checks the stream against; the bench's figures need only the times.
  virtual void on_text(size_t /*index*/, std::string_view /*text*/) {}
  //! Its one terminal message; nothing about it comes after.
  virtual void on_end(size_t index, const bench_outcome& outcome) = 0;
};

//! The server's queue and KV cache now.
struct target_gauges {
  uint32_t waiting = 0, running = 0;
  uint32_t kv_used = 0, kv_total = 0;  //!< blocks
};

//! What the server's iterations ran over the run, and its configured limits (0 / empty: unknown).
struct server_figures {
  bool has_steps = false;
  uint64_t steps = 0;
  dist_summary seqs = {}, prefill_tokens = {}, decode_tokens = {}, step_ms = {};  //!< per iteration
  uint64_t preemptions = 0;
  uint32_t max_seqs = 0, max_batched_tokens = 0, long_prefill_threshold = 0;
  std::string policy = {}, mode = {};
};

class bench_target {
 public:
  virtual ~bench_target() = default;
  //! Sends one request and returns at once (open loop: never waits for it to progress). The
  //! target keeps `sink` as long as it may still call it: events can come after a run is over.
  virtual void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) = 0;
  //! Sampled every fraction of a second while the run lasts, from its own thread.
  virtual target_gauges gauges() = 0;
  //! Once, after the run.
  virtual server_figures figures() = 0;
};

}  // namespace hearth::household
