#include "clients/cpp/replies.hpp"

namespace hearth::client {

namespace {

using json = nlohmann::json;
constexpr std::string_view marker = "hearth/1";

double ms_between(generation::clock_type::time_point from, generation::clock_type::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

}  // namespace

std::optional<reply> decode_reply(std::span<const std::string_view> frames) {
  if (frames.size() != 2 || frames[0] != marker) return std::nullopt;
  json msg = json::parse(frames[1], nullptr, false);  // no exceptions: a discarded value instead
  auto type = field<std::string>(msg, "type");
  auto id = field<std::string>(msg, "id");
  if (!type || !id) return std::nullopt;
  return reply{std::move(*type), std::move(*id), std::move(msg)};
}

const json& object_field(const json& obj, std::string_view key) {
  static const json empty = json::object();
  if (!obj.is_object()) return empty;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_object() ? *it : empty;
}

error error_of(const json& msg) {
  auto code = field<std::string>(msg, "code");
  return {code && !code->empty() ? std::move(*code) : std::string("protocol"),
          field<std::string>(msg, "message").value_or(""),
          field<uint32_t>(msg, "retry_after_ms").value_or(0)};
}

generation::generation(clock_type::time_point started, std::chrono::milliseconds first_token_timeout,
                       std::chrono::milliseconds idle_timeout)
    : first_token_timeout_(first_token_timeout),
      idle_timeout_(idle_timeout),
      started_(started),
      last_token_(started) {}

std::optional<token> generation::feed(const reply& r, clock_type::time_point now) {
  if (ended_) return std::nullopt;
  const json& msg = r.body;
  if (r.type == "token") {
    auto text = field<std::string>(msg, "text");
    if (!text) return std::nullopt;  // nothing to hand out; nor is it progress for the idle timeout
    // A missing or mistyped index is the token's place; a missing id is -1 (no token has it).
    token t{field<uint32_t>(msg, "index").value_or(static_cast<uint32_t>(done_.tokens.size())),
            field<int32_t>(msg, "token").value_or(-1), std::move(*text)};
    last_token_ = now;
    if (!first_token_) done_.client_ttft_ms = ms_between(started_, now);
    first_token_ = true;
    done_.text += t.text;
    done_.tokens.push_back(t.id);
    return t;
  }
  if (r.type == "accepted") {
    accepted_ = true;
  } else if (r.type == "error") {
    end(error_of(msg));
  } else if (r.type == "done") {
    const json& use = object_field(msg, "usage");
    const json& time = object_field(msg, "timings");
    completion& d = done_;
    d.finish_reason = field<std::string>(msg, "finish_reason").value_or("");
    if (auto text = field<std::string>(msg, "text")) d.text = std::move(*text);  // else the tokens' texts
    d.prompt_tokens = field<uint32_t>(use, "prompt_tokens").value_or(0);
    d.completion_tokens = field<uint32_t>(use, "completion_tokens").value_or(0);
    d.cached_tokens = field<uint32_t>(use, "cached_tokens").value_or(0);
    d.queue_ms = field<double>(time, "queue_ms").value_or(0);
    d.ttft_ms = field<double>(time, "ttft_ms").value_or(0);
    d.prefill_ms = field<double>(time, "prefill_ms").value_or(0);
    d.first_step_ms = field<double>(time, "first_step_ms").value_or(0);
    d.mean_itl_ms = field<double>(time, "mean_itl_ms").value_or(0);
    d.e2e_ms = field<double>(time, "e2e_ms").value_or(0);
    d.preemptions = field<uint32_t>(msg, "preemptions").value_or(0);
    if (!first_token_) d.client_ttft_ms = ms_between(started_, now);
    d.client_e2e_ms = ms_between(started_, now);
    end(std::move(d));
  }
  // Types this client does not know (a later server's) are skipped.
  return std::nullopt;
}

void generation::fail(error e) {
  if (!ended_) end(std::move(e));
}

void generation::end(outcome<completion> r) {
  ended_ = true;
  result_ = std::move(r);
}

generation::clock_type::time_point generation::deadline() const {
  constexpr auto never = clock_type::time_point::max();
  if (!first_token_) return first_token_timeout_.count() > 0 ? started_ + first_token_timeout_ : never;
  return idle_timeout_.count() > 0 ? last_token_ + idle_timeout_ : never;
}

}  // namespace hearth::client
