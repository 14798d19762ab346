#include "core/config.hpp"

#include <charconv>
#include <string>

namespace hearth {

namespace {

error invalid(const std::string& what) {
  return error{errc::invalid_argument, "engine config: " + what};
}

}  // namespace

status<> check_workers(const std::vector<worker_endpoint>& workers) {
  for (size_t i = 0; i < workers.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const worker_endpoint &a = workers[j], &b = workers[i];
      if (a.host == b.host && a.port == b.port)
        return error{errc::invalid_argument, "worker " + b.text() + " is listed twice"};
      // One actor system, one TLS identity: the server proves itself to every worker alike.
      if (!a.credentials.empty() && !b.credentials.empty() && a.credentials != b.credentials)
        return error{errc::invalid_argument, "workers " + a.text() + " and " + b.text() +
                                                 " name different credentials; a server has one (keygen "
                                                 "--worker's folder)"};
    }
  }
  return {};
}

status<> check(const engine_config& c) {
  if (c.max_seqs == 0) return invalid("max_seqs must be >= 1");
  // Every running request gets its decode token in every step.
  if (c.max_batched_tokens < c.max_seqs) {
    return invalid("max_batched_tokens (" + std::to_string(c.max_batched_tokens) + ") must be >= max_seqs (" +
                   std::to_string(c.max_seqs) + ")");
  }
  if (c.max_partial_prefills == 0) return invalid("max_partial_prefills must be >= 1");
  if (c.max_waiting == 0) return invalid("max_waiting must be >= 1");
  if (c.step_timeout_ms == 0) return invalid("step_timeout_ms must be >= 1");
  if (c.mode == placement_mode::disaggregated && c.workers.empty() && !c.worker_cpus.empty() &&
      c.worker_cpus == c.decode_cpus) {
    return invalid("disaggregated workers need different cpusets");
  }
  if (auto st = check_workers(c.workers); !st) return invalid(st.error().message);
  if (c.local_worker && c.workers.empty())
    return invalid(
        "local_worker is for a worker here beside [[engine.worker]]s; without them it is the only one");
  if (auto st = check_roles(c); !st) return invalid(st.error().message);
  if (c.local_worker && c.mode == placement_mode::disaggregated)
    return invalid(
        "local_worker is for data-parallel workers (mode = \"colocated\"); disaggregated, the side "
        "no [[engine.worker]] takes runs here");
  if (auto st = check_tenants(c.tenants); !st) return invalid(st.error().message);
  return {};
}

status<> check_roles(const engine_config& c) {
  const bool split = c.mode == placement_mode::disaggregated;
  auto bad = [](const worker_endpoint& w, const std::string& why) {
    return error{errc::invalid_argument, "worker " + w.text() + ": " + why};
  };
  for (size_t i = 0; i < c.workers.size(); ++i) {
    const worker_endpoint& w = c.workers[i];
    const std::string role = std::string("role = \"") + to_string(w.role) + "\"";
    if (!split && w.role != worker_role::none) return bad(w, role + " needs mode = \"disaggregated\"");
    if (split && w.role == worker_role::none)
      return bad(w,
                 "under mode = \"disaggregated\" an entry runs one side: role = \"prefill\" or \"decode\"");
    for (size_t j = 0; j < i; ++j)
      if (split && c.workers[j].role == w.role)
        return bad(w, role + " is taken by worker " + c.workers[j].text() + " already; one worker per side");
    // Two nodes cannot share one pool: a remote side's blocks always travel by copy.
    if (split && c.kv_handoff == kv_handoff_mode::share)
      return bad(w, role +
                        " puts that side on another node, whose KV blocks are copied: kv_handoff = "
                        "\"share\" needs both sides here (\"copy\" or \"automatic\")");
  }
  return {};
}

const worker_endpoint* remote_side(const engine_config& c, worker_role side) {
  for (const worker_endpoint& w : c.workers)
    if (w.role == side) return &w;
  return nullptr;
}

const char* to_string(worker_role r) {
  return r == worker_role::prefill ? "prefill" : r == worker_role::decode ? "decode" : "none";
}

std::string shared_credentials(const std::vector<worker_endpoint>& workers) {
  for (const worker_endpoint& w : workers)
    if (!w.credentials.empty()) return w.credentials;
  return {};
}

std::string worker_endpoint::text() const {
  const bool v6 = host.find(':') != std::string::npos;
  std::string out = "tcp://";
  if (v6) out += '[';
  out += host.empty() ? "*" : host;
  if (v6) out += ']';
  out += ':';
  out += std::to_string(port);
  return out;
}

bool worker_endpoint::loopback() const {
  return host == "localhost" || host == "::1" || host.starts_with("127.");
}

status<> worker_endpoint::check_reach() const {
  if (loopback() || !credentials.empty()) return {};
  return error{errc::invalid_argument,
               "worker " + text() +
                   ": off this machine the channel needs credentials (hearth keygen --worker DIR, then the "
                   "worker's --credentials DIR and the entry's credentials = \"DIR\")"};
}

result<worker_endpoint> parse_worker_endpoint(std::string_view text, bool listening) {
  auto bad = [&](const std::string& why) {
    return error{errc::invalid_argument, std::string(text) + ": " + why};
  };
  constexpr std::string_view scheme = "tcp://";
  if (!text.starts_with(scheme)) return bad("a worker endpoint is tcp://HOST:PORT");
  std::string_view rest = text.substr(scheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return bad("needs a :PORT");
  std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) return bad("needs a HOST");
  if (host.find_first_of("[]/ ") != std::string_view::npos) return bad("HOST is not a name or an address");
  worker_endpoint e;
  e.host = host == "*" ? "" : std::string(host);
  if (e.host.empty() && !listening) return bad("HOST * is for listening: name the worker's host");
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
  const unsigned lowest = listening ? 0 : 1;
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || v < lowest || v > 65535)
    return bad("PORT must be a number from " + std::to_string(lowest) + " to 65535");
  e.port = static_cast<uint16_t>(v);
  return e;
}

const char* to_string(placement_mode m) {
  return m == placement_mode::colocated ? "colocated" : "disaggregated";
}

}  // namespace hearth
