#pragma once
// The server's replies as the client reads them, without sockets: one received message decoded,
// fields read through one typed accessor, and one generation's state as its replies arrive. The
// stream (client.hpp) is this plus the socket; the fuzz harness (tests/fuzz/fuzz_client_replies.cpp)
// drives it directly.
//
// Nothing here throws on what a server sends. The rules are the Python client's
// (clients/python/hearth_client/protocol.py): a message that is not a JSON object with a string
// `type` and `id` is dropped; a field of the wrong type reads as absent and takes its default;
// a `token` without a string `text` is skipped. clients/cpp/README.md lists them.

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"

namespace hearth::client {

//! A failed call: a protocol error code (bad_request, too_long, unauthorized, over_quota,
//! queue_full, shutting_down, cancelled, internal) or one of the client's own: `timeout`
//! (nothing arrived in time), `unreachable` (connect: nothing listens at the endpoint, the
//! connection was refused), `handshake` (connect: the ZMTP handshake failed), `transport` (the
//! socket failed), `protocol` (the server's reply was not protocol v1); connect's `bad_request`
//! is a bad endpoint or key, its `unauthorized` a CURVE key the server refused.
struct error {
  std::string code;
  std::string message;
  uint32_t retry_after_ms = 0;  //!< over_quota: when to retry (0 = not given)
};
template <class T>
using outcome = hearth::result<T, error>;

struct token {
  uint32_t index = 0;  //!< its position in the completion
  int32_t id = 0;      //!< -1 when the server sent none (or not an integer)
  std::string text;    //!< may be empty; the concatenated texts are the completion
};

struct completion {
  std::string finish_reason;  //!< eos, stop or length
  std::string text;           //!< the whole completion
  std::vector<int32_t> tokens;
  uint32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
  double queue_ms = 0, ttft_ms = 0, mean_itl_ms = 0, e2e_ms = 0;  //!< the server's timings
  double prefill_ms = 0, first_step_ms = 0;  //!< with queue_ms, the parts of ttft_ms (protocol.md)
  uint32_t preemptions = 0;
  double client_ttft_ms = 0;  //!< measured here, from start() to the first token
  double client_e2e_ms = 0;   //!< from start() to the terminal message
};

//! One message from the server that is about a request.
struct reply {
  std::string type;
  std::string id;
  nlohmann::json body;  //!< the whole message, type and id included
};

//! The reply in one received message (its frames: "hearth/1", then the JSON), or nullopt for
//! anything else: not protocol v1, not a JSON object, no string `type`, or no string `id` (a
//! heartbeat, or an error about no request).
std::optional<reply> decode_reply(std::span<const std::string_view> frames);

//! The member `key` of `obj` as a T (std::string, bool, double, or an integer type the value fits
//! in), or nullopt when obj is not an object, has no such member, or holds another JSON type there
//! (an integer field takes integers only, not 3.0). The one way this client reads a reply's fields.
template <class T>
std::optional<T> field(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return std::nullopt;
  const auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  const nlohmann::json& v = *it;
  if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_unsigned() && std::in_range<T>(v.get<uint64_t>()))
      return static_cast<T>(v.get<uint64_t>());
    if (v.is_number_integer() && !v.is_number_unsigned() && std::in_range<T>(v.get<int64_t>()))
      return static_cast<T>(v.get<int64_t>());
  } else {
    static_assert(std::is_same_v<T, void>, "field<T>: T is a string, bool, floating-point or integer type");
  }
  return std::nullopt;
}

//! The member `key` of `obj` when it is an object, else an empty object: nested fields
//! (`usage`, `timings`) are then read with field() like the others.
const nlohmann::json& object_field(const nlohmann::json& obj, std::string_view key);

//! The error an `error` reply carries: its code (`protocol` when it has no string code), message
//! and retry_after_ms.
error error_of(const nlohmann::json& msg);

//! One generation as the replies about it arrive; the clock is passed in. Deadlines: until the
//! first token (with stream = false, until `done`) the first-token deadline, from the start; then
//! the idle deadline, from the latest token. `accepted` and heartbeats move neither: a heartbeat
//! is about the connection, and a request waiting in the queue is what the first-token timeout
//! is for (the Python client's rule).
class generation {
 public:
  using clock_type = std::chrono::steady_clock;
  //! 0 ms for a timeout: none.
  generation(clock_type::time_point started, std::chrono::milliseconds first_token_timeout,
             std::chrono::milliseconds idle_timeout);

  //! Applies one reply about this generation: the token to hand out, or nullopt for one that
  //! changes nothing visible (accepted, a token without text, a type this client does not know)
  //! and for the terminal `done` or `error`, after which ended() holds. Once ended, a reply
  //! changes nothing.
  std::optional<token> feed(const reply& r, clock_type::time_point now);
  //! Ends it with `e` (a timeout, a lost connection); a no-op once it has ended.
  void fail(error e);

  //! When it times out; clock_type::time_point::max() for never.
  clock_type::time_point deadline() const;
  bool ended() const { return ended_; }
  bool accepted() const { return accepted_; }
  //! Whether a token has arrived (the idle timeout applies, not the first-token one).
  bool streaming() const { return first_token_; }
  //! After ended(): the completion, or why it failed.
  const outcome<completion>& result() const { return result_; }

 private:
  void end(outcome<completion> r);

  std::chrono::milliseconds first_token_timeout_, idle_timeout_;
  clock_type::time_point started_, last_token_;
  bool first_token_ = false, ended_ = false, accepted_ = false;
  completion done_;
  outcome<completion> result_ = error{"pending", "the stream has not ended"};
};

}  // namespace hearth::client
