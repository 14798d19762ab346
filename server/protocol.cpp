// Inside this file a bad field throws `refusal` (server/json_fields.hpp); parse_message, the
// edge, turns it (and nlohmann's parse_error) into a parse_failure value.
#include "server/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

#include "server/json_fields.hpp"

namespace hearth::wire {

namespace {

using json = nlohmann::json;

// JSON nested deeper than this is refused before it is parsed: no message of the protocol
// nests more than three levels, and a flood of brackets must not cost a deep DOM.
constexpr int max_depth = 8;
constexpr size_t max_messages = 256;

std::optional<std::string> tenant_field(const fields& f) {
  if (!f.has("tenant")) return std::nullopt;
  std::string t = f.text("tenant", 1, 64);
  if (!is_tenant_name(t)) f.fail("tenant", "must be 1 to 64 letters, digits, '_', '.' or '-'");
  return t;
}

std::vector<chat_message> read_messages(const fields& f) {
  std::vector<chat_message> out;
  const json& list = f.array("messages", 1, max_messages);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!list[i].is_object()) f.fail(at, "must be an object {role, content}");
    const fields m(list[i], at + ".");
    m.only({"role", "content"});
    chat_message turn{m.text("role", 1, 16), m.text("content", 0, std::string::npos)};
    if (turn.role != "system" && turn.role != "user" && turn.role != "assistant")
      m.fail("role", "must be \"system\", \"user\" or \"assistant\"");
    out.push_back(std::move(turn));
  }
  return out;
}

generate_request read_generate(const fields& f, std::string id, const parse_limits& lim) {
  f.only({"type", "id", "prompt", "messages", "max_tokens", "temperature", "top_k", "top_p", "min_p",
          "repetition_penalty", "repeat_last_n", "seed", "stop", "stream", "ignore_eos", "tenant"});
  generate_request g;
  g.id = std::move(id);
  if (f.has("prompt") == f.has("messages")) f.fail("prompt", "or 'messages': exactly one must be given");
  if (f.has("prompt"))
    g.prompt = f.text("prompt", 0, std::string::npos);
  else
    g.messages = read_messages(f);
  g.max_tokens = static_cast<uint32_t>(f.integer("max_tokens", 1, 65536, 256));
  auto& s = g.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 0, 100, false, 1.0));
  s.top_k = static_cast<uint32_t>(f.integer("top_k", 0, lim.n_vocab, 0));
  s.top_p = static_cast<float>(f.number("top_p", 0, 1, true, 1.0));
  s.min_p = static_cast<float>(f.number("min_p", 0, 1, false, 0.0));
  s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 0, 10, true, 1.0));
  s.repeat_last_n = static_cast<uint32_t>(f.integer("repeat_last_n", 0, 65536, 64));
  s.seed = static_cast<uint64_t>(f.integer("seed", 0, max_seed, 0));
  g.stop = read_stops(f, "stop", false);
  g.stream = f.flag("stream", true);
  g.ignore_eos = f.flag("ignore_eos", false);
  g.tenant = tenant_field(f);
  return g;
}

admin_request read_admin(const fields& f, std::string id) {
  f.only({"type", "id", "action", "policy"});
  admin_request a{std::move(id), f.text("action", 1, 32)};
  if (a.action == "set_policy")
    a.policy = f.text("policy", 1, 64);
  else if (a.action != "reload")
    f.fail("action", "must be \"set_policy\" or \"reload\"");
  else if (f.has("policy"))
    f.fail("policy", "is only for action \"set_policy\"");
  return a;
}

client_message read_message(const json& j, const std::string& type, std::string id, const parse_limits& lim) {
  const fields f(j);
  if (type == "generate") return read_generate(f, std::move(id), lim);
  if (type == "admin") return read_admin(f, std::move(id));
  if (type == "stats") {
    f.only({"type", "id", "tenant", "all"});
    return stats_request{std::move(id), tenant_field(f), f.flag("all", false)};
  }
  f.only({"type", "id"});
  if (type == "cancel") return cancel_request{std::move(id)};
  if (type == "ping") return ping_request{std::move(id)};
  if (type == "models") return models_request{std::move(id)};
  f.fail("type", "must be generate, cancel, ping, stats, models or admin (got " + shown(type) + ")");
}

}  // namespace

bool is_tenant_name(std::string_view name) {
  auto allowed = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  };
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), allowed);
}

result<client_message, parse_failure> parse_message(std::span<const std::string_view> frames,
                                                    const parse_limits& lim) {
  if (frames.size() != 2)
    return parse_failure{std::nullopt,
                         "a message has exactly 2 frames (got " + std::to_string(frames.size()) + ")"};
  if (frames[0] != marker) return parse_failure{std::nullopt, "frame 0 must be the marker 'hearth/1'"};
  if (nested_too_deep(frames[1], max_depth)) return parse_failure{std::nullopt, "JSON nested too deeply"};
  json j = json::parse(frames[1], nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return parse_failure{std::nullopt, "frame 1 is not valid JSON in UTF-8"};
  if (!j.is_object()) return parse_failure{std::nullopt, "frame 1 must be a JSON object"};
  // The id first: every later refusal can then name the request it refuses.
  std::optional<std::string> id;
  try {
    const fields f(j);
    id = f.text("id", 1, max_id_bytes);
    const std::string type = f.text("type", 1, 32);
    return read_message(j, type, *id, lim);
  } catch (const refusal& r) {
    return parse_failure{std::move(id), r.message};
  }
}

std::string encode(const json& reply) {
  return reply.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_accepted(std::string_view id, uint32_t prompt_tokens) {
  return encode({{"type", "accepted"}, {"id", id}, {"prompt_tokens", prompt_tokens}});
}

std::string encode_token(std::string_view id, uint32_t index, token_id token, std::string_view text) {
  return encode({{"type", "token"}, {"id", id}, {"index", index}, {"token", token}, {"text", text}});
}

json encode_timings(const timings& time) {
  return {{"queue_ms", time.queue_ms},       {"ttft_ms", time.ttft_ms},
          {"prefill_ms", time.prefill_ms},   {"first_step_ms", time.first_step_ms},
          {"mean_itl_ms", time.mean_itl_ms}, {"e2e_ms", time.e2e_ms}};
}

std::string encode_done(std::string_view id, std::string_view finish, const usage& use, const timings& time,
                        uint32_t preemptions, const std::string* text) {
  json j = {{"type", "done"},
            {"id", id},
            {"finish_reason", finish},
            {"usage",
             {{"prompt_tokens", use.prompt_tokens},
              {"completion_tokens", use.completion_tokens},
              {"cached_tokens", use.cached_tokens}}},
            {"timings", encode_timings(time)},
            {"preemptions", preemptions}};
  if (text) j["text"] = *text;
  return encode(j);
}

std::string encode_error(const std::optional<std::string>& id, std::string_view code,
                         std::string_view message, uint64_t retry_after_ms) {
  json j = {{"type", "error"}, {"id", id ? json(*id) : json(nullptr)}, {"code", code}, {"message", message}};
  if (retry_after_ms > 0) j["retry_after_ms"] = retry_after_ms;
  return encode(j);
}

std::string encode_refused(std::string_view id, std::string_view code, std::string_view message) {
  return encode({{"type", "refused"}, {"id", id}, {"code", code}, {"message", message}});
}

std::string encode_heartbeat() {
  return encode({{"type", "heartbeat"}});
}

}  // namespace hearth::wire
