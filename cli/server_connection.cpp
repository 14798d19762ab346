#include "cli/server_connection.hpp"

#include <cstdio>

namespace hearth::cli {

void add_server_options(CLI::App* cmd, server_args& a, const std::string& key_help,
                        const std::string& tenant) {
  a.tenant = tenant;
  cmd->add_option("-e,--endpoint", a.endpoint, "Server endpoint")->capture_default_str();
  cmd->add_option("--server-key", a.server_key, "The server's public key (Z85), as `hearth serve` prints it");
  cmd->add_option("--key", a.key_file, key_help);
  cmd->add_option("--tenant", a.tenant, "Development mode: the tenant to ask as")->capture_default_str();
}

result<client::options> client_options(const server_args& a, std::chrono::milliseconds connect_timeout) {
  client::options opt{.endpoint = a.endpoint,
                      .server_key = a.server_key,
                      .tenant = a.tenant,
                      .connect_timeout = connect_timeout};
  if (a.server_key.empty() && a.key_file.empty()) return opt;
  if (a.server_key.empty() || a.key_file.empty())
    return error{errc::invalid_argument, "CURVE needs both --server-key and --key"};
  auto keys = client::read_key_file(a.key_file);
  if (!keys) return keys.error();
  opt.keys = *keys;
  opt.tenant.clear();  // the server knows who we are from the key
  return opt;
}

int report(const client::error& e) {
  std::fprintf(stderr, "hearth: %s: %s\n", e.code.c_str(), e.message.c_str());
  return e.code == "timeout" || e.code == "transport" ? exit_unreachable : exit_refused;
}

}  // namespace hearth::cli
