#pragma once
// What the HTTP APIs (Ollama's in ollama.hpp, OpenAI's in openai.hpp) share: the request a
// route reads from its JSON body, the error it answers before a reply starts, and the interface
// through which each API writes one request's replies. Pure functions over text and events, no
// sockets: the tests drive them directly.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.hpp"
#include "core/request.hpp"
#include "model/chat_tools.hpp"
#include "server/json_fields.hpp"
#include "server/protocol.hpp"
#include "server/request_path.hpp"

namespace hearth::http {

//! Bounds both APIs hold a chat request to.
inline constexpr size_t max_messages = 256;
inline constexpr size_t max_calls = 32;  //!< tool calls in one assistant turn

//! What a route read from its request's body.
struct api_request {
  wire::generate_request g;    //!< the gateways' shared client request; g.stream: stream the reply
  std::string model;           //!< as the client named it, echoed in every reply
  bool random_seed = false;    //!< no seed given: the gateway draws one (both APIs' default)
  bool include_usage = false;  //!< OpenAI's stream_options.include_usage
  bool load_only = false;      //!< Ollama: no prompt, a client preloading the model: done at once
};

//! A request refused before any byte of its reply: the HTTP status and what the client is told.
struct api_error {
  int status = 400;
  server::client_error err;
  std::string param = {};  //!< the field refused, when one is (OpenAI's error object names it)
};

//! What the APIs check requests against.
struct api_limits {
  std::string model;  //!< the served model's name: requests may name it, or it with ":latest"
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
};

//! The HTTP status of a protocol error code: bad_request and too_long 400, unauthorized 401,
//! over_quota 429, queue_full and shutting_down 503, anything else 500.
int http_status(std::string_view code);

//! A bad_request naming `param`, from a refusal's message.
api_error bad_field(std::string message, std::string param = {});

//! The JSON object in `body`, refused as a 400 when it is not one (or nests too deeply).
result<nlohmann::json, api_error> parse_body(std::string_view body);

//! The `model` field: required, and it must name the served model (404 otherwise, as both
//! APIs answer an unknown model).
result<std::string, api_error> read_model(const wire::fields& f, const api_limits& lim);

//! The body's JSON with its keys in the client's order when it has tools or tool calls (parse_body's
//! checks passed), else null: what the prompt renders tools and call arguments from, as the
//! model's template would.
nlohmann::ordered_json ordered_body(std::string_view body, const nlohmann::json& parsed);

//! The value in `ordered` at `path` (object keys, array indexes), or null where there is none: a
//! body with a key twice keeps the first in ordered_json, the last in json, so the two parses may
//! differ, and a lookup must never assume they match.
using json_step = std::variant<std::string_view, size_t>;
const nlohmann::ordered_json& ordered_at(const nlohmann::ordered_json& ordered,
                                         std::initializer_list<json_step> path);

//! The request's `tools` (none when missing or empty): function tools, each checked, as JSON
//! texts in the client's key order (`ordered`: ordered_body's).
std::vector<std::string> read_tools(const wire::fields& f, const nlohmann::ordered_json& ordered);

//! A call's name, checked (1 to 64 bytes): what a tool's `function.name` and a call's share.
std::string read_call_name(const wire::fields& function);

//! Reads a request with `read(fields, ordered_body)` (which throws wire::refusal for a bad
//! field): the edge that turns refusals into a 400 naming the field.
template <class Read>
result<api_request, api_error> read_request(std::string_view body, const api_limits& lim, Read read) {
  auto j = parse_body(body);
  if (!j) return j.error();
  const wire::fields f(*j);
  auto model = read_model(f, lim);
  if (!model) return model.error();
  try {
    api_request r = read(f, ordered_body(body, *j));
    r.model = std::move(*model);
    return r;
  } catch (const wire::refusal& e) {
    return bad_field(e.message);
  }
}

//! How one API writes one request's replies. A stream is start(), token() for every piece of
//! text and calls() for the tool calls the model makes, then end() or failed(); a reply that
//! does not stream is whole() (or error_body()).
class reply_format {
 public:
  virtual ~reply_format() = default;
  virtual const char* stream_type() const = 0;  //!< the Content-Type of a stream
  virtual std::string start() { return {}; }
  virtual std::string token(std::string_view text) = 0;
  virtual std::string calls(std::span<const tool_call> calls) = 0;
  //! The stream's last bytes, after its `done` event.
  virtual std::string end(const request_event& done) = 0;
  //! An error after the stream began (its status line is sent already).
  virtual std::string failed(const api_error& e) = 0;
  //! The body of a reply that does not stream.
  virtual std::string whole(const assistant_reply& reply, const request_event& done) = 0;
  //! The body of a refusal, in this API's error shape.
  virtual std::string error_body(const api_error& e) const = 0;
};

//! JSON text as the replies write it: invalid UTF-8 in a model's text replaced (U+FFFD).
std::string dump(const nlohmann::json& j);

}  // namespace hearth::http
