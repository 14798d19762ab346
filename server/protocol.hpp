#pragma once
// Wire protocol v1 (docs/protocol.md), the server's side: client messages parsed into typed
// values with every field checked, and server messages written as JSON. Pure functions, no
// sockets: the malformed-input corpus is tested (and fuzzed) here in microseconds.
//
// Everything a client sends is untrusted: a failure names the field and what is wrong with it,
// and carries the message's `id` when one could be read, so the gateway answers `bad_request`
// to the right request.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.hpp"
#include "core/request.hpp"
#include "model/chat_template.hpp"

namespace hearth::wire {

inline constexpr std::string_view marker = "hearth/1";  //!< frame 0 of every message
inline constexpr int protocol_version = 1;
inline constexpr int protocol_revision = 4;  //!< within v1: docs/protocol.md, "Versioning"
inline constexpr size_t max_id_bytes = 64;

//! The error codes of protocol.md. The engine's reject_reason names (to_string) are the same words.
namespace code {
inline constexpr std::string_view bad_request = "bad_request";
inline constexpr std::string_view unauthorized = "unauthorized";
inline constexpr std::string_view shutting_down = "shutting_down";
inline constexpr std::string_view cancelled = "cancelled";
inline constexpr std::string_view internal = "internal";
}  // namespace code

struct generate_request {
  std::string id;
  std::optional<std::string> prompt;  //!< exactly one of prompt / messages
  std::vector<chat_message> messages = {};
  std::vector<std::string> tools = {};  //!< the tools' JSON texts (model/chat_tools.hpp); HTTP only
  uint32_t max_tokens = 256;
  sampling_params sampling = {};
  std::vector<std::string> stop = {};
  bool stream = true;
  bool ignore_eos = false;            //!< run to max_tokens: end-of-generation tokens never drawn
  std::optional<std::string> tenant;  //!< development mode: who asks; CURVE: must match
};
struct cancel_request {
  std::string id;
};
struct ping_request {
  std::string id;
};
struct stats_request {
  std::string id;
  std::optional<std::string> tenant;  //!< development mode: whose counters
  bool all = false;                   //!< every tenant's counters too: admin tenants only
};
struct models_request {
  std::string id;
};
struct admin_request {
  std::string id;
  std::string action;       //!< "set_policy" or "reload"
  std::string policy = {};  //!< set_policy: the policy's name
};

using client_message = std::variant<generate_request, cancel_request, ping_request, stats_request,
                                    models_request, admin_request>;

//! Why a message was refused (always answered with `bad_request`).
struct parse_failure {
  std::optional<std::string> id;  //!< the message's id when it had a readable one, else null
  std::string message;            //!< names the field
};

//! What the codec must know about the served model to check ranges.
struct parse_limits {
  uint32_t n_vocab = 0;  //!< top_k at most this
};

//! One message as received after the routing id: exactly [marker, JSON object].
result<client_message, parse_failure> parse_message(std::span<const std::string_view> frames,
                                                    const parse_limits& lim);

//! Whether `name` is a valid tenant name (1-64 of A-Z a-z 0-9 _ . -), as in the tenants file.
bool is_tenant_name(std::string_view name);

// Server messages, each the JSON text of frame 1. Text fields are written with invalid UTF-8
// replaced (U+FFFD), so a model's odd bytes never break a message.
std::string encode_accepted(std::string_view id, uint32_t prompt_tokens);
std::string encode_token(std::string_view id, uint32_t index, token_id token, std::string_view text);
//! A request's timings as `done` carries them (queue_ms, ttft_ms, prefill_ms, first_step_ms,
//! mean_itl_ms, e2e_ms); the HTTP gateway sends the same object as an extension.
nlohmann::json encode_timings(const timings& time);
//! `finish`: eos, stop or length. `text`: the whole completion of a non-streaming request
//! (nullptr when streaming).
std::string encode_done(std::string_view id, std::string_view finish, const usage& use, const timings& time,
                        uint32_t preemptions, const std::string* text);
//! `id` null when the message it answers had no readable id; retry_after_ms 0 = not given.
std::string encode_error(const std::optional<std::string>& id, std::string_view code,
                         std::string_view message, uint64_t retry_after_ms = 0);
//! A message refused while a request with the same `id` is in flight on the connection: unlike
//! `error`, it does not end that request (docs/protocol.md, "refused").
std::string encode_refused(std::string_view id, std::string_view code, std::string_view message);
std::string encode_heartbeat();
//! Any other reply (pong, stats, models, admin) as frame-1 text, written like the ones above.
std::string encode(const nlohmann::json& reply);

}  // namespace hearth::wire
