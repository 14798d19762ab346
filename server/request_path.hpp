#pragma once
// The request path the gateways share. Each front end reads its own request format (wire
// protocol v1 over ZeroMQ; Ollama's and OpenAI's JSON over HTTP) into one client request,
// wire::generate_request; from there one place makes the engine request (tenant, sampling,
// stop strings, the prompt's tokens), and one place says what an engine event that ends a
// request without `done` tells the client (the protocol's error code, its message, the retry
// hint). The front ends differ only in how they write the replies.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/request.hpp"
#include "model/tokenizer.hpp"
#include "server/protocol.hpp"
#include "tenants/tenant_config.hpp"

namespace hearth::server {

//! What the gateways say about the served model (`models`, /api/tags, /v1/models).
struct model_card {
  std::string name;
  std::string architecture;
  std::string chat_format;
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  bool tools = false;      //!< its chat template renders tools and it answers with calls
  bool generated = false;  //!< a `hearth model make` file: random weights (model_maker.hpp)
};

//! A request refused or ended without `done`, as its client is told: a code of
//! docs/protocol.md's error table (the engine's reject_reason names are the same words).
struct client_error {
  std::string_view code;
  std::string message;
  uint64_t retry_after_ms = 0;  //!< over_quota by a rate limit: when a retry can pass; 0 = unknown
};

//! Bytes of prompt text: whether a gateway tokenizes it inline or on a thread of its own.
size_t prompt_bytes(const wire::generate_request& g);
//! The prompt's tokens: raw text with the model's BOS, or the turns through its chat template;
//! turns fail for a model whose chat template Hearth does not recognise.
result<std::vector<token_id>> tokenize_prompt(const tokenizer& tok, const wire::generate_request& g);

//! The engine request for `g` run as `tenant`, without its prompt yet (tokenizing may happen
//! elsewhere): limits, sampling and stop strings moved out of `g`; share_prefix as `tenants`
//! lists the tenant (an unlisted tenant shares, as the engine's default slot does).
request engine_request(wire::generate_request& g, std::string tenant,
                       const std::vector<tenant_config>& tenants);

//! Puts the tokenized prompt into `r`. Turns the model cannot format (its error, naming `model`)
//! and a prompt that gives no tokens are a bad_request.
//! `r.max_tokens` 0 (the HTTP APIs' "no limit") becomes what the context of `n_ctx` positions
//! leaves after the prompt, at least 1 (a prompt that fills it is then refused as too_long).
std::optional<client_error> set_prompt(request& r, result<std::vector<token_id>> prompt,
                                       std::string_view model, uint32_t n_ctx);

//! What a terminal event other than `done` (cancelled, rejected, error) tells the client.
client_error error_of(const request_event& e);

}  // namespace hearth::server
