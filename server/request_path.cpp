#include "server/request_path.hpp"

#include <algorithm>
#include <cassert>

#include "model/chat_prompt.hpp"

namespace hearth::server {

namespace {

// The wire protocol's own bound on max_tokens (docs/protocol.md), kept for "no limit" too.
constexpr uint32_t max_completion_tokens = 65536;

}  // namespace

size_t prompt_bytes(const wire::generate_request& g) {
  if (g.prompt) return g.prompt->size();
  size_t n = 0;
  for (const auto& m : g.messages) n += m.content.size();
  for (const auto& t : g.tools) n += t.size();
  return n;
}

result<std::vector<token_id>> tokenize_prompt(const tokenizer& tok, const wire::generate_request& g) {
  if (g.prompt) return tok.encode(*g.prompt, {.add_bos = true, .parse_special = false});
  return encode_chat(tok, g.messages, g.tools);
}

request engine_request(wire::generate_request& g, std::string tenant,
                       const std::vector<tenant_config>& tenants) {
  request r;
  r.tenant = std::move(tenant);
  r.max_tokens = g.max_tokens;
  r.sampling = g.sampling;
  r.stop = std::move(g.stop);
  r.ignore_eos = g.ignore_eos;
  const auto t = std::find_if(tenants.begin(), tenants.end(),
                              [&](const tenant_config& c) { return c.name == r.tenant; });
  if (t != tenants.end()) r.share_prefix = t->share_prefix;
  return r;
}

std::optional<client_error> set_prompt(request& r, result<std::vector<token_id>> prompt,
                                       std::string_view model, uint32_t n_ctx) {
  if (!prompt) {
    // A template Hearth cannot format at all leaves the raw prompt; a refused tool does not.
    const bool unformattable = prompt.error().code == errc::unsupported;
    return client_error{wire::code::bad_request, "field 'messages': model '" + std::string(model) +
                                                     "': " + prompt.error().message +
                                                     (unformattable ? "; send 'prompt' instead" : "")};
  }
  if (prompt->empty()) return client_error{wire::code::bad_request, "field 'prompt' gives no tokens"};
  if (r.max_tokens == 0) {
    const uint32_t left = prompt->size() < n_ctx ? n_ctx - static_cast<uint32_t>(prompt->size()) : 1;
    r.max_tokens = std::min(left, max_completion_tokens);
  }
  r.prompt = std::move(*prompt);
  return std::nullopt;
}

client_error error_of(const request_event& e) {
  assert(e.terminal() && e.kind != event_kind::done && "error_of: only for a terminal event other than done");
  if (e.kind == event_kind::cancelled)
    return {wire::code::cancelled, e.message.empty() ? "cancelled" : e.message};
  const std::string_view code = e.reason == reject_reason::none ? wire::code::internal : to_string(e.reason);
  return {code, e.message, e.retry_after_ms};
}

}  // namespace hearth::server
