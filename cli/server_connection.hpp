#pragma once
// How the client subcommands (`chat`, `status`) reach a running server: the endpoint, CURVE keys
// or a development-mode tenant, and what their exit codes say about a failed exchange.
#include <CLI/CLI.hpp>

#include <string>

#include "clients/cpp/client.hpp"

namespace hearth::cli {

//! Exit codes beyond 0 and 1: the server could not be reached or went silent (timeout,
//! transport); the server refused or failed the request.
inline constexpr int exit_unreachable = 2, exit_refused = 3;

struct server_args {
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::string server_key, key_file;
  std::string tenant;  //!< development mode: who asks
};

//! --endpoint, --server-key, --key (`key_help` says whose) and --tenant (default `tenant`).
void add_server_options(CLI::App* cmd, server_args& a, const std::string& key_help,
                        const std::string& tenant);

//! The client options for `a`: CURVE when a key is given (both halves needed), else the tenant.
//! The message names what is wrong (an endpoint without its scheme, half a pair, an unreadable
//! key file).
result<client::options> client_options(const server_args& a, std::chrono::milliseconds connect_timeout);

//! Prints "hearth: CODE: message" on stderr (no server: "… — start one with `hearth serve`");
//! exit_unreachable for no server, a transport error or silence, else exit_refused.
int report(const client::error& e);

//! A failed connect: 1 for options the client refused, else exit_unreachable (no server, a
//! refused key or handshake, silence), reported.
int report_connect(const client::error& e);

}  // namespace hearth::cli
