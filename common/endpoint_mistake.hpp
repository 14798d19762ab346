#pragma once
// An endpoint's text, checked before libzmq sees it: libzmq answers an endpoint without a
// scheme (`localhost:5555`) with a bare "Invalid argument". The client, `hearth chat` and
// `hearth serve` (server/endpoint.cpp) say what was meant instead: the client and the server
// share it, so it lives here.

#include <optional>
#include <string>
#include <string_view>

namespace hearth {

//! nullopt for an endpoint with a scheme Hearth speaks (tcp://, ipc://, inproc://); else the
//! one-line reason, beginning with the endpoint (for the caller to put the flag or field in
//! front), with a guess where there is one: `localhost:5555` gets "did you mean
//! tcp://localhost:5555?", `5555` tcp://127.0.0.1:5555, `http://...` a pointer to the HTTP APIs.
std::optional<std::string> endpoint_mistake(std::string_view endpoint);

}  // namespace hearth
