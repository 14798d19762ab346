// tls_probe: the smallest pair of CAF nodes over CAF's OpenSSL transport, to show what the worker
// channel's transport accepts (tests/cli/test_worker_tls.sh):
//   tls_probe serve PORT DIR        publishes an actor that answers a ping, for 10 s
//   tls_probe ask PORT DIR|none     asks it; exit 0 when answered, 2 when the connection is refused
//   tls_probe ask-plain PORT        asks over the plain middleman (no TLS); exit as above
// DIR holds `hearth keygen --worker`'s files; "none" configures no credentials.
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "actors/worker_credentials.hpp"

namespace {

using ping_atom = caf::atom_constant<caf::atom("ping")>;

int ask(caf::actor_system& sys, caf::expected<caf::actor> to) {
  if (!to) {
    std::printf("refused: %s\n", sys.render(to.error()).c_str());
    return 2;
  }
  caf::scoped_actor self{sys};
  int answer = 0;
  self->request(*to, std::chrono::seconds(5), ping_atom::value, 41)
      .receive([&](int v) { answer = v; },
               [&](caf::error& e) { std::printf("no answer: %s\n", sys.render(e).c_str()); });
  std::printf("answered %d\n", answer);
  return answer == 42 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 64;
  const std::string verb = argv[1];
  const auto port = static_cast<uint16_t>(std::atoi(argv[2]));
  caf::actor_system_config cfg;
  cfg.load<caf::io::middleman>();
  cfg.load<caf::openssl::manager>();
  if (argc > 3 && std::string(argv[3]) != "none") {
    const hearth::worker_credentials c = hearth::credentials_in(argv[3]);
    cfg.openssl_certificate = c.node_cert;
    cfg.openssl_key = c.node_key;
    cfg.openssl_cafile = c.ca_cert;
  }
  caf::actor_system sys{cfg};
  if (verb == "serve") {
    // With an argument: CAF 0.17 spawning a functor of none binds a reference to a null tuple (UBSan).
    auto a = sys.spawn(
        [](int step) -> caf::behavior { return {[step](ping_atom, int x) { return x + step; }}; }, 1);
    auto p = caf::openssl::publish(a, port, "127.0.0.1", true);
    if (!p) {
      std::printf("cannot publish: %s\n", sys.render(p.error()).c_str());
      return 1;
    }
    std::printf("listening\n");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::seconds(10));
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    return 0;
  }
  if (verb == "ask") return ask(sys, caf::openssl::remote_actor<caf::actor>(sys, "127.0.0.1", port));
  if (verb == "ask-plain") return ask(sys, sys.middleman().remote_actor<caf::actor>("127.0.0.1", port));
  return 64;
}
