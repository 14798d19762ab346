// hearth keygen: a CURVE key pair for the server or a client, written to a file only its owner
// can read (mode 0600; format in clients/cpp/keys.hpp), and its public key alone beside it
// (mode 0644): server.key -> server.pub, as an ssh key's .pub (other names: FILE.pub).
// Prints the public key on stdout too: the server's goes to its clients, a client's into the
// server's tenants file. With --worker DIR: the credentials a server and its workers prove
// themselves to each other with (actors/worker_credentials.hpp).
#include <cstdio>
#include <filesystem>

#include "actors/worker_credentials.hpp"
#include "cli/commands.hpp"
#include "cli/common_options.hpp"
#include "clients/cpp/keys.hpp"

namespace hearth::cli {
namespace {

int run_keygen(const std::string& path) {
  std::filesystem::path pub(path);
  if (pub.extension() == ".key")
    pub.replace_extension(".pub");
  else
    pub += ".pub";
  const std::string pub_path = pub.string();
  // Neither file is written when either exists: a pair is never split.
  for (const auto& p : {path, pub_path})
    if (std::error_code ec; std::filesystem::exists(p, ec)) return fail(p + ": exists (never overwritten)");
  auto keys = client::generate_key_pair();
  if (!keys) return fail(keys.error().message);
  if (auto st = client::write_key_file(path, *keys); !st) return fail(st.error().message);
  if (auto st = client::write_public_key_file(pub_path, keys->public_key); !st)
    return fail(st.error().message);
  std::printf("%s\n", keys->public_key.c_str());
  std::fprintf(stderr,
               "hearth: wrote %s (mode 0600: it holds the secret key) and %s (the public key, above)\n",
               path.c_str(), pub_path.c_str());
  return 0;
}

int run_worker_keygen(const std::string& dir) {
  if (auto st = write_worker_credentials(dir); !st) return fail(st.error().message);
  const worker_credentials c = credentials_in(dir);
  std::fprintf(
      stderr,
      "hearth: wrote %s, %s and %s (mode 0600): copy the folder to the server and every worker; a node "
      "without it is refused\n",
      c.ca_cert.c_str(), c.node_cert.c_str(), c.node_key.c_str());
  return 0;
}

}  // namespace

void add_keygen_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("keygen", "Write a CURVE key pair (Z85) to a file and print its public key");
  auto path = std::make_shared<std::string>("hearth.key");
  auto worker_dir = std::make_shared<std::string>();
  auto* output =
      cmd->add_option("-o,--output", *path, "Key file to create (never overwritten)")->capture_default_str();
  cmd->add_option("--worker", *worker_dir,
                  "Instead: the TLS credentials of a server and its workers (an authority and the nodes' key "
                  "and certificate) into this folder, never overwritten")
      ->excludes(output);
  cmd->callback([path, worker_dir, &exit_code] {
    exit_code = worker_dir->empty() ? run_keygen(*path) : run_worker_keygen(*worker_dir);
  });
}

}  // namespace hearth::cli
