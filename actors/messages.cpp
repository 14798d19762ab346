#include "actors/messages.hpp"

#include <caf/io/middleman.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>

#include "actors/worker_credentials.hpp"

namespace hearth {

namespace {

// One CAF thread runs admission, the scheduler and metrics: their work per step is small, and
// every extra thread would compete with the workers' kernel threads for the same cores.
constexpr size_t caf_threads = 1;
// A silent peer is dropped after connection_timeout; heartbeats keep a quiet but live one
// (a server between requests) joined.
constexpr auto heartbeat_interval = std::chrono::seconds(1);
constexpr auto connection_timeout = std::chrono::seconds(5);

}  // namespace

caf::actor_system_config& configure_actor_system(caf::actor_system_config& cfg, bool networked,
                                                 const std::string& credentials) {
  cfg.set("scheduler.max-threads", caf_threads);
  // An idle scheduler thread polls its queue 500 times with a 50 us sleep between tries before it
  // waits on its condition variable (CAF 0.17's work stealing): between steps that was thousands
  // of wake-ups a second on the cores the kernels run on. Straight to the wait: every enqueue from
  // another thread (a worker's step result, the middleman, the clock) notifies it.
  cfg.set("work-stealing.moderate-poll-attempts", size_t{0});
  add_message_types(cfg);
  if (networked) {
    cfg.load<caf::io::middleman>();
    cfg.set("middleman.heartbeat-interval", caf::timespan{heartbeat_interval});
    cfg.set("middleman.connection-timeout", caf::timespan{connection_timeout});
  }
  if (networked && !credentials.empty()) {
    // A certificate and a CA file: CAF 0.17.6 verifies the peer at both ends (it falls back to
    // anonymous ciphers only without them; tests/cli/test_worker_tls.sh).
    const worker_credentials c = credentials_in(credentials);
    cfg.load<caf::openssl::manager>();
    cfg.openssl_certificate = c.node_cert;
    cfg.openssl_key = c.node_key;
    cfg.openssl_cafile = c.ca_cert;
  }
  return cfg;
}

caf::expected<uint16_t> publish_actor(caf::actor_system& sys, const caf::actor& a, uint16_t port,
                                      const char* host, bool tls) {
  return tls ? caf::openssl::publish(a, port, host, true) : sys.middleman().publish(a, port, host, true);
}

caf::expected<caf::actor> connect_actor(caf::actor_system& sys, const std::string& host, uint16_t port,
                                        bool tls) {
  return tls ? caf::openssl::remote_actor<caf::actor>(sys, host, port)
             : sys.middleman().remote_actor(host, port);
}

void add_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<worker_info>("worker_info");
  cfg.add_message_type<join_hello>("join_hello");
  cfg.add_message_type<request>("request");
  cfg.add_message_type<request_event>("request_event");
  cfg.add_message_type<step>("step");
  cfg.add_message_type<step_result>("step_result");
  cfg.add_message_type<request_record>("request_record");
  cfg.add_message_type<std::vector<request_record>>("std::vector<request_record>");
  cfg.add_message_type<scheduler_gauges>("scheduler_gauges");
  cfg.add_message_type<metrics_snapshot>("metrics_snapshot");
  cfg.add_message_type<step_sample>("step_sample");
  cfg.add_message_type<std::vector<request_id>>("std::vector<request_id>");
  cfg.add_message_type<std::vector<uint32_t>>("std::vector<uint32_t>");
  cfg.add_message_type<kv_bytes>("hearth::kv_bytes");
  cfg.add_message_type<std::vector<tenant_config>>("std::vector<tenant_config>");
}

std::string error_text(caf::actor_system& sys, const caf::error& err) {
  const caf::message& context = err.context();
  if (context.match_elements<std::string>()) return context.get_as<std::string>(0);
  return sys.render(err);
}

std::string down_text(caf::actor_system& sys, const std::string& role, const caf::error& reason) {
  // A worker in another process whose connection broke (it ended, or the network failed, or it
  // went silent past the middleman's connection timeout) is a proxy CAF stops so; one stopped by
  // SIGTERM (`hearth worker`) ends with user_shutdown.
  if (reason == caf::exit_reason::remote_link_unreachable)
    return role + " is unreachable: the connection to it was lost";
  if (reason == caf::exit_reason::user_shutdown) return role + " was shut down";
  return role + " stopped: " + error_text(sys, reason);
}

}  // namespace hearth
