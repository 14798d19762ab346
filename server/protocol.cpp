// Inside this file a bad field throws `refusal`; parse_message, the edge, turns it (and
// nlohmann's parse_error) into a parse_failure value.
#include "server/protocol.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <nlohmann/json.hpp>

namespace hearth::wire {

namespace {

using json = nlohmann::json;

struct refusal {
  std::string message;
};

// JSON nested deeper than this is refused before it is parsed: no message of the protocol
// nests more than three levels, and a flood of brackets must not cost a deep DOM.
constexpr int max_depth = 8;
constexpr size_t max_messages = 256;
constexpr size_t max_stops = 8;
constexpr size_t max_stop_bytes = 256;
constexpr int64_t max_seed = int64_t{1} << 53;

// A field name as a client wrote it, short enough to quote in an error.
std::string shown(std::string_view name) {
  std::string s(1, '\'');  // (appended piece by piece: g++ 12 warns falsely, -Wrestrict, on "'" + ...)
  s.append(name.substr(0, 64));
  s.append(name.size() > 64 ? "...'" : "'");
  return s;
}

bool nested_too_deep(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

// Reads the fields of one JSON object; every refusal names the field (`path` prefixes nested ones).
class fields {
 public:
  fields(const json& object, std::string path = {}) : o_(object), path_(std::move(path)) {}

  //! Refuses any field not in `known`.
  void only(std::initializer_list<std::string_view> known) const {
    for (const auto& [k, v] : o_.items())
      if (std::find(known.begin(), known.end(), k) == known.end()) fail(k, "is not a field of this message");
  }

  bool has(std::string_view f) const { return o_.contains(f); }

  std::string text(std::string_view f, size_t min_bytes, size_t max_bytes) const {
    const json& v = get(f);
    if (!v.is_string()) fail(f, "must be a string");
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() < min_bytes || s.size() > max_bytes)
      fail(f, "must be " + std::to_string(min_bytes) + " to " + std::to_string(max_bytes) + " bytes (got " +
                  std::to_string(s.size()) + ")");
    return s;
  }

  int64_t integer(std::string_view f, int64_t lo, int64_t hi, int64_t fallback) const {
    if (!has(f)) return fallback;
    const json& v = get(f);
    const std::string range = "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
    if (!v.is_number_integer()) fail(f, "must be " + range);
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) fail(f, "must be " + range);
    const int64_t x = v.get<int64_t>();
    if (x < lo || x > hi) fail(f, "must be " + range + " (got " + std::to_string(x) + ")");
    return x;
  }

  //! A number in [lo, hi], or (lo, hi] when `lo_open`.
  double number(std::string_view f, double lo, double hi, bool lo_open, double fallback) const {
    if (!has(f)) return fallback;
    const json& v = get(f);
    if (!v.is_number()) fail(f, "must be a number");
    const double x = v.get<double>();
    if (!std::isfinite(x) || (lo_open ? x <= lo : x < lo) || x > hi) {
      char range[96];
      std::snprintf(range, sizeof range, "must be a number in %s%g, %g] (got %g)", lo_open ? "(" : "[", lo, hi, x);
      fail(f, range);
    }
    return x;
  }

  bool flag(std::string_view f, bool fallback) const {
    if (!has(f)) return fallback;
    const json& v = get(f);
    if (!v.is_boolean()) fail(f, "must be true or false");
    return v.get<bool>();
  }

  const json& array(std::string_view f, size_t min_n, size_t max_n) const {
    const json& v = get(f);
    if (!v.is_array()) fail(f, "must be an array");
    if (v.size() < min_n || v.size() > max_n)
      fail(f, "must have " + std::to_string(min_n) + " to " + std::to_string(max_n) + " entries (got " +
                  std::to_string(v.size()) + ")");
    return v;
  }

  std::string name(std::string_view f) const { return path_ + std::string(f); }

  [[noreturn]] void fail(std::string_view f, const std::string& what) const {
    throw refusal{"field " + shown(name(f)) + " " + what};
  }

 private:
  const json& get(std::string_view f) const {
    const auto it = o_.find(f);
    if (it == o_.end()) fail(f, "is missing");
    return *it;
  }

  const json& o_;
  std::string path_;
};

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

std::vector<std::string> read_stops(const fields& f) {
  std::vector<std::string> out;
  if (!f.has("stop")) return out;
  const json& list = f.array("stop", 0, max_stops);
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = "stop[" + std::to_string(i) + "]";
    if (!list[i].is_string()) f.fail(at, "must be a string");
    const auto& s = list[i].get_ref<const std::string&>();
    if (s.empty() || s.size() > max_stop_bytes) f.fail(at, "must be 1 to 256 bytes");
    out.push_back(s);
  }
  return out;
}

generate_request read_generate(const fields& f, std::string id, const parse_limits& lim) {
  f.only({"type", "id", "prompt", "messages", "max_tokens", "temperature", "top_k", "top_p", "min_p",
          "repetition_penalty", "repeat_last_n", "seed", "stop", "stream", "ignore_eos", "tenant"});
  generate_request g;
  g.id = std::move(id);
  if (f.has("prompt") == f.has("messages")) f.fail("prompt", "or 'messages': exactly one must be given");
  if (f.has("prompt")) g.prompt = f.text("prompt", 0, std::string::npos);
  else g.messages = read_messages(f);
  g.max_tokens = static_cast<uint32_t>(f.integer("max_tokens", 1, 65536, 256));
  auto& s = g.sampling;
  s.temperature = static_cast<float>(f.number("temperature", 0, 100, false, 1.0));
  s.top_k = static_cast<uint32_t>(f.integer("top_k", 0, lim.n_vocab, 0));
  s.top_p = static_cast<float>(f.number("top_p", 0, 1, true, 1.0));
  s.min_p = static_cast<float>(f.number("min_p", 0, 1, false, 0.0));
  s.repetition_penalty = static_cast<float>(f.number("repetition_penalty", 0, 10, true, 1.0));
  s.repeat_last_n = static_cast<uint32_t>(f.integer("repeat_last_n", 0, 65536, 64));
  s.seed = static_cast<uint64_t>(f.integer("seed", 0, max_seed, 0));
  g.stop = read_stops(f);
  g.stream = f.flag("stream", true);
  g.ignore_eos = f.flag("ignore_eos", false);
  g.tenant = tenant_field(f);
  return g;
}

admin_request read_admin(const fields& f, std::string id) {
  f.only({"type", "id", "action", "policy"});
  admin_request a{std::move(id), f.text("action", 1, 32)};
  if (a.action == "set_policy") a.policy = f.text("policy", 1, 64);
  else if (a.action != "reload") f.fail("action", "must be \"set_policy\" or \"reload\"");
  else if (f.has("policy")) f.fail("policy", "is only for action \"set_policy\"");
  return a;
}

client_message read_message(const json& j, const std::string& type, std::string id, const parse_limits& lim) {
  const fields f(j);
  if (type == "generate") return read_generate(f, std::move(id), lim);
  if (type == "admin") return read_admin(f, std::move(id));
  if (type == "stats") {
    f.only({"type", "id", "tenant"});
    return stats_request{std::move(id), tenant_field(f)};
  }
  f.only({"type", "id"});
  if (type == "cancel") return cancel_request{std::move(id)};
  if (type == "ping") return ping_request{std::move(id)};
  if (type == "models") return models_request{std::move(id)};
  f.fail("type", "must be generate, cancel, ping, stats, models or admin (got " + shown(type) + ")");
}

}  // namespace

bool is_tenant_name(std::string_view name) {
  auto allowed = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'; };
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), allowed);
}

result<client_message, parse_failure> parse_message(std::span<const std::string_view> frames, const parse_limits& lim) {
  if (frames.size() != 2)
    return parse_failure{std::nullopt, "a message has exactly 2 frames (got " + std::to_string(frames.size()) + ")"};
  if (frames[0] != marker) return parse_failure{std::nullopt, "frame 0 must be the marker 'hearth/1'"};
  if (nested_too_deep(frames[1])) return parse_failure{std::nullopt, "JSON nested too deeply"};
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

std::string encode(const json& reply) { return reply.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string encode_accepted(std::string_view id, uint32_t prompt_tokens) {
  return encode({{"type", "accepted"}, {"id", id}, {"prompt_tokens", prompt_tokens}});
}

std::string encode_token(std::string_view id, uint32_t index, token_id token, std::string_view text) {
  return encode({{"type", "token"}, {"id", id}, {"index", index}, {"token", token}, {"text", text}});
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
            {"timings",
             {{"queue_ms", time.queue_ms},
              {"ttft_ms", time.ttft_ms},
              {"prefill_ms", time.prefill_ms},
              {"first_step_ms", time.first_step_ms},
              {"mean_itl_ms", time.mean_itl_ms},
              {"e2e_ms", time.e2e_ms}}},
            {"preemptions", preemptions}};
  if (text) j["text"] = *text;
  return encode(j);
}

std::string encode_error(const std::optional<std::string>& id, std::string_view code, std::string_view message,
                         uint64_t retry_after_ms) {
  json j = {{"type", "error"}, {"id", id ? json(*id) : json(nullptr)}, {"code", code}, {"message", message}};
  if (retry_after_ms > 0) j["retry_after_ms"] = retry_after_ms;
  return encode(j);
}

std::string encode_refused(std::string_view id, std::string_view code, std::string_view message) {
  return encode({{"type", "refused"}, {"id", id}, {"code", code}, {"message", message}});
}

std::string encode_heartbeat() { return encode({{"type", "heartbeat"}}); }

}  // namespace hearth::wire
