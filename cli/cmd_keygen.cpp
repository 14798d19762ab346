// hearth keygen: a CURVE key pair for the server or a client, written to a file only its owner
// can read (mode 0600; format in clients/cpp/keys.hpp). Prints the public key on stdout: the
// server's goes to its clients, a client's into the server's tenants file.
#include <cstdio>

#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "clients/cpp/keys.hpp"

namespace hearth::cli {
namespace {

int run_keygen(const std::string& path) {
  auto keys = client::generate_key_pair();
  if (!keys) return fail(keys.error().message);
  if (auto st = client::write_key_file(path, *keys); !st) return fail(st.error().message);
  std::printf("%s\n", keys->public_key.c_str());
  std::fprintf(stderr, "hearth: wrote %s (mode 0600: it holds the secret key); the public key is above\n", path.c_str());
  return 0;
}

}  // namespace

void add_keygen_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("keygen", "Write a CURVE key pair (Z85) to a file and print its public key");
  auto path = std::make_shared<std::string>("hearth.key");
  cmd->add_option("-o,--output", *path, "Key file to create (never overwritten)")->capture_default_str();
  cmd->callback([path, &exit_code] { exit_code = run_keygen(*path); });
}

}  // namespace hearth::cli
