#include "server/http/api.hpp"

#include <nlohmann/json.hpp>

namespace hearth::http {

namespace {

using json = nlohmann::json;

// No request of either API nests deeper than five levels (OpenAI's content parts inside a
// message inside `messages`); a flood of brackets must not cost a deep DOM.
constexpr int max_depth = 16;

api_error model_not_found(std::string message) {
  return {404, {"model_not_found", std::move(message)}, "model"};
}

}  // namespace

int http_status(std::string_view code) {
  if (code == wire::code::bad_request || code == "too_long") return 400;
  if (code == wire::code::unauthorized) return 401;
  if (code == "over_quota") return 429;
  if (code == "queue_full" || code == wire::code::shutting_down) return 503;
  return 500;
}

api_error bad_field(std::string message, std::string param) {
  // A refusal reads "field 'name' ...": the name is the OpenAI error's `param`.
  if (param.empty() && message.starts_with("field '")) {
    const size_t close = message.find('\'', 7);
    if (close != std::string::npos) param = message.substr(7, close - 7);
  }
  return {400, {wire::code::bad_request, std::move(message)}, std::move(param)};
}

result<json, api_error> parse_body(std::string_view body) {
  if (wire::nested_too_deep(body, max_depth)) return bad_field("the body's JSON nests too deeply");
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return bad_field("the body is not valid JSON in UTF-8");
  if (!j.is_object()) return bad_field("the body must be a JSON object");
  return j;
}

result<std::string, api_error> read_model(const wire::fields& f, const api_limits& lim) {
  if (!f.has("model") || !f.get("model").is_string())
    return bad_field("field 'model' must be a string", "model");
  std::string name = f.get("model").get<std::string>();
  if (name == lim.model || name == lim.model + ":latest") return name;
  return model_not_found("model '" + name.substr(0, 128) + "' not found (this server has '" + lim.model +
                         "')");
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hearth::http
