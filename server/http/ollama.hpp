#pragma once
// Ollama's API (its docs/api.md, as the `ollama` client packages and Home Assistant speak it):
// /api/chat and /api/generate read into the shared client request, their replies written as
// Ollama writes them (NDJSON lines when streaming, one object when not), and the model routes'
// answers (/api/tags, /api/show, /api/ps, /api/version).

#include <memory>

#include "server/http/api.hpp"

namespace hearth::http {

//! The Ollama API version /api/version reports: the one whose fields this gateway follows.
inline constexpr std::string_view ollama_api_version = "0.6.0";

//! POST /api/chat: model, messages, options, stream, keep_alive (accepted: the model stays
//! loaded), format (refused), tools (refused while not supported).
result<api_request, api_error> parse_ollama_chat(std::string_view body, const api_limits& lim);
//! POST /api/generate: model, prompt, system, raw, options, stream, keep_alive, format (refused).
result<api_request, api_error> parse_ollama_generate(std::string_view body, const api_limits& lim);

//! The replies of one /api/chat (`chat`) or /api/generate request.
std::unique_ptr<reply_format> ollama_format(bool chat, std::string model);

//! GET /api/tags; /api/ps (the one model, always loaded); POST /api/show.
std::string ollama_tags(const server::model_card& m);
std::string ollama_ps(const server::model_card& m);
result<std::string, api_error> ollama_show(std::string_view body, const server::model_card& m);

}  // namespace hearth::http
