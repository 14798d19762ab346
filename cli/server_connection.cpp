#include "cli/server_connection.hpp"

#include <cstdio>

#include "cli/common_options.hpp"
#include "common/endpoint_mistake.hpp"

namespace hearth::cli {

void add_server_options(CLI::App* cmd, server_args& a, const std::string& key_help,
                        const std::string& tenant) {
  a.tenant = tenant;
  cmd->add_option("-e,--endpoint", a.endpoint, "Server endpoint")->capture_default_str();
  cmd->add_option(
      "--server-key", a.server_key,
      "The server's public key: its Z85 text, as `hearth serve` prints it, or its file (server.pub from "
      "`hearth keygen -o server.key`)");
  cmd->add_option("--key", a.key_file, key_help);
  cmd->add_option("--tenant", a.tenant, "Development mode: the tenant to ask as")->capture_default_str();
}

result<client::options> client_options(const server_args& a, std::chrono::milliseconds connect_timeout) {
  if (auto mistake = endpoint_mistake(a.endpoint))
    return error{errc::invalid_argument, "--endpoint " + *mistake};
  client::options opt{.endpoint = a.endpoint, .tenant = a.tenant, .connect_timeout = connect_timeout};
  if (a.server_key.empty() && a.key_file.empty()) return opt;
  if (a.server_key.empty() || a.key_file.empty())
    return error{errc::invalid_argument, "CURVE needs both --server-key and --key"};
  auto server_key = client::read_public_key(a.server_key);
  if (!server_key) return error{errc::invalid_argument, "--server-key " + server_key.error().message};
  opt.server_key = *server_key;
  auto keys = client::read_key_file(a.key_file);
  if (!keys) return keys.error();
  opt.keys = *keys;
  opt.tenant.clear();  // the server knows who we are from the key
  return opt;
}

int report(const client::error& e) {
  if (e.code == "unreachable")
    std::fprintf(stderr, "hearth: %s — start one with `hearth serve`\n", e.message.c_str());
  else
    std::fprintf(stderr, "hearth: %s: %s\n", e.code.c_str(), e.message.c_str());
  return e.code == "timeout" || e.code == "transport" || e.code == "unreachable" ? exit_unreachable
                                                                                 : exit_refused;
}

int report_connect(const client::error& e) {
  if (e.code == "bad_request") return fail(e.message);
  (void)report(e);
  return exit_unreachable;
}

}  // namespace hearth::cli
