#include "server/http/api.hpp"

#include <nlohmann/json.hpp>

namespace hearth::http {

namespace {

using json = nlohmann::json;

// A flood of brackets must not cost a deep DOM; a tool's JSON schema nests deepest (a body's
// tools[i].function.parameters.properties.p.items... is some ten levels).
constexpr int max_depth = 32;
constexpr size_t max_tools = 128;

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

nlohmann::ordered_json ordered_body(std::string_view body, const json& parsed) {
  bool calls = false;
  if (const auto m = parsed.find("messages"); m != parsed.end() && m->is_array())
    for (const json& turn : *m) calls = calls || (turn.is_object() && turn.contains("tool_calls"));
  if (!calls && !parsed.contains("tools")) return nullptr;
  return nlohmann::ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
}

const nlohmann::ordered_json& ordered_at(const nlohmann::ordered_json& ordered,
                                         std::initializer_list<json_step> path) {
  static const nlohmann::ordered_json none;
  const nlohmann::ordered_json* at = &ordered;
  for (const json_step& step : path) {
    if (const auto* key = std::get_if<std::string_view>(&step)) {
      const auto it = at->is_object() ? at->find(*key) : at->end();
      if (!at->is_object() || it == at->end()) return none;
      at = &*it;
    } else {
      const size_t i = std::get<size_t>(step);
      if (!at->is_array() || i >= at->size()) return none;
      at = &(*at)[i];
    }
  }
  return *at;
}

std::string read_call_name(const wire::fields& function) {
  return function.text("name", 1, 64);
}

std::vector<std::string> read_tools(const wire::fields& f, const nlohmann::ordered_json& ordered) {
  if (!f.has("tools") || f.get("tools").is_null()) return {};
  const json& list = f.array("tools", 0, max_tools);
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = f.name("tools[" + std::to_string(i) + "]");
    if (!list[i].is_object()) throw wire::refusal{"field '" + at + "' must be an object {type, function}"};
    const wire::fields t(list[i], at + ".");
    if (t.text("type", 1, 16) != "function") t.fail("type", "must be \"function\"");
    if (!t.get("function").is_object())
      t.fail("function", "must be an object {name, description, parameters}");
    const wire::fields fn(t.get("function"), at + ".function.");
    read_call_name(fn);
    if (fn.has("parameters") && !fn.get("parameters").is_object())
      fn.fail("parameters", "must be a JSON schema object");
    const auto& tool = ordered_at(ordered, {"tools", i});
    out.push_back((tool.is_object() ? tool.dump() : list[i].dump()));
  }
  return out;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace hearth::http
