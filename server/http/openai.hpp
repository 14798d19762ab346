#pragma once
// OpenAI's API (its chat completions and legacy completions, as the `openai` client packages
// speak them): the requests read into the shared client request, the replies written as OpenAI
// writes them (server-sent events ending with `data: [DONE]` when streaming), errors as its
// error objects ({"error": {"message", "type", "param", "code"}}), and GET /v1/models.

#include <memory>

#include "server/http/api.hpp"

namespace hearth::http {

//! POST /v1/chat/completions: model, messages, max_tokens / max_completion_tokens, temperature,
//! top_p, stop, seed, n (1 only), stream, stream_options.include_usage; top_k, min_p and
//! repetition_penalty as extensions. Tools, logprobs and JSON response formats are refused.
result<api_request, api_error> parse_openai_chat(std::string_view body, const api_limits& lim);
//! POST /v1/completions: model, prompt (one string), max_tokens (default 16, as OpenAI's), and
//! the sampling fields above.
result<api_request, api_error> parse_openai_completion(std::string_view body, const api_limits& lim);

//! The replies of one chat completion (`chat`) or completion; `id` names it ("chatcmpl-7").
std::unique_ptr<reply_format> openai_format(bool chat, std::string model, std::string id, bool include_usage);

//! An error object outside any request (a bad key, a body that is not JSON, an unknown route).
std::string openai_error(const api_error& e);

//! GET /v1/models.
std::string openai_models(const server::model_card& m);

}  // namespace hearth::http
