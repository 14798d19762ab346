// Reads [server], [model] and [engine] with toml++, and refuses any other top-level name. Inside
// this file a bad field throws bad_config; parse_serve_config, the edge, turns it (and toml++'s
// parse_error) into an error.
#include "server/serve_config.hpp"

#include <algorithm>
#include <limits>

#include <toml++/toml.h>

#include "common/text_file.hpp"
#include "policies/policy.hpp"
#include "server/endpoint.hpp"
#include "server/protocol.hpp"

namespace hearth::server {

namespace {

struct bad_config {
  std::string message;
};

// The fields of one section, each refusal naming source:line and [section].field.
class section {
 public:
  section(std::string_view source, const toml::table& root, std::string_view name,
          std::initializer_list<std::string_view> known)
      : source_(source), name_(name) {
    const toml::node* n = root.get(name);
    if (!n) return;
    if (!n->is_table()) fail(n, "", "must be a table: write [" + std::string(name) + "]");
    t_ = n->as_table();
    refuse_unknown(known);
  }

  //! Each entry of the array of tables [[name.field]], as a section of its own named
  //! name.field; `read` gets each in turn.
  template <class Read>
  void entries(std::string_view field, std::initializer_list<std::string_view> known, Read read) const {
    const toml::node* n = get(field);
    if (!n) return;
    const std::string qualified = name_ + "." + std::string(field);
    if (!n->is_array_of_tables()) fail(n, field, "must be tables: write [[" + qualified + "]]");
    for (const toml::node& entry : *n->as_array()) read(section(source_, entry.as_table(), qualified, known));
  }

  void text(std::string_view field, std::string& out) const {
    if (const toml::node* n = get(field)) {
      if (!n->is_string()) fail(n, field, "must be a string");
      out = n->as_string()->get();
    }
  }

  //! A string that must also pass `check`, whose message begins with the value.
  void checked_text(std::string_view field, std::string& out, status<> (*check)(std::string_view)) const {
    text(field, out);
    if (!get(field)) return;
    if (auto st = check(out); !st) fail(get(field), field, st.error().message);
  }

  bool present() const { return t_ != nullptr; }

  //! Fields that come together: one without the other is refused, naming both.
  void both_or_neither(std::string_view a, std::string_view b) const {
    if (has(a) == has(b)) return;
    const std::string_view given = has(a) ? a : b, missing = has(a) ? b : a;
    fail(get(given), given, "needs " + std::string(missing) + " too");
  }
  bool has(std::string_view field) const { return get(field) != nullptr; }

  void flag(std::string_view field, bool& out) const {
    if (const toml::node* n = get(field)) {
      if (!n->is_boolean()) fail(n, field, "must be true or false");
      out = n->as_boolean()->get();
    }
  }

  void choice(std::string_view field, std::string& out, const std::vector<std::string>& allowed) const {
    text(field, out);
    if (get(field) && std::find(allowed.begin(), allowed.end(), out) == allowed.end()) {
      std::string list;
      for (auto a : allowed) list += (list.empty() ? "\"" : ", \"") + std::string(a) + "\"";
      fail(get(field), field, "must be one of " + list + " (got \"" + out + "\")");
    }
  }

  template <class T>
  void count(std::string_view field, T& out, int64_t lo, int64_t hi = std::numeric_limits<T>::max()) const {
    const toml::node* n = get(field);
    if (!n) return;
    if (!n->is_integer()) fail(n, field, "must be a whole number");
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      fail(n, field,
           "must be from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got " + std::to_string(v) +
               ")");
    out = static_cast<T>(v);
  }

  //! Refuses a field that is given, at its line.
  [[noreturn]] void refuse(std::string_view field, const std::string& what) const {
    fail(get(field), field, what);
  }

  //! The field, which must be there.
  const toml::node& required(std::string_view field) const {
    const toml::node* n = get(field);
    if (!n) fail(t_, field, "is missing");
    return *n;
  }

  [[noreturn]] void fail(const toml::node* at, std::string_view field, const std::string& what) const {
    const auto line = at ? at->source().begin.line : 0;
    throw bad_config{std::string(source_) + ":" + std::to_string(line) + ": [" + name_ + "]" +
                     (field.empty() ? "" : "." + std::string(field)) + " " + what};
  }

 private:
  // An entry of an array of tables (a pointer, not the root's reference: another constructor).
  section(std::string_view source, const toml::table* t, std::string name,
          std::initializer_list<std::string_view> known)
      : source_(source), name_(std::move(name)), t_(t) {
    refuse_unknown(known);
  }

  void refuse_unknown(std::initializer_list<std::string_view> known) const {
    for (const auto& [k, v] : *t_)
      if (std::find(known.begin(), known.end(), k.str()) == known.end())
        fail(&v, k.str(), "is not a known field");
  }

  const toml::node* get(std::string_view field) const { return t_ ? t_->get(field) : nullptr; }

  std::string_view source_;
  std::string name_;
  const toml::table* t_ = nullptr;
};

// Every reader looks up its own section by name, so a misspelt one ([sever]) was read by none
// and its fields lost without a word: a lost secret_key_file left the server in development mode.
void only_known_sections(std::string_view source, const toml::table& root) {
  constexpr std::string_view known[] = {"server", "http", "model", "engine", "tenant"};
  for (const auto& [k, v] : root) {
    if (std::ranges::find(known, k.str()) != std::end(known)) continue;
    const std::string name(k.str());
    const std::string what = v.is_table()             ? "[" + name + "] is not a known section"
                             : v.is_array_of_tables() ? "[[" + name + "]] is not a known section"
                                                      : name + " is outside any section";
    throw bad_config{std::string(source) + ":" + std::to_string(v.source().begin.line) + ": " + what +
                     " (known: [server], [http], [model], [engine], [[tenant]])"};
  }
}

void read_server(const section& s, serve_config& c) {
  s.checked_text("endpoint", c.endpoint, check_endpoint_port);
  s.text("secret_key_file", c.secret_key_file);
  s.count("max_message_bytes", c.max_message_bytes, 1024, int64_t{1} << 30);
  s.count("heartbeat_ms", c.heartbeat_ms, 10, 60000);
  s.count("drain_timeout_s", c.drain_timeout_s, 0, 3600);
  s.choice("log_level", c.log_level, {"error", "warning", "info", "debug"});
}

// The HTTP endpoint is HOST:PORT; its port follows the ZeroMQ endpoint's rules.
status<> check_http_port(std::string_view endpoint) {
  if (auto st = check_endpoint_port("tcp://" + std::string(endpoint)); !st)
    return error{errc::invalid_argument,
                 std::string(endpoint) + ": a HOST:PORT with PORT from 1 to 65535, or 0 or *"};
  return {};
}

void read_http(const section& s, serve_config& c) {
  c.http = s.present();
  s.checked_text("endpoint", c.http_endpoint, check_http_port);
  s.flag("public", c.http_public);
  std::string anonymous;
  s.checked_text("anonymous_tenant", anonymous, [](std::string_view name) -> status<> {
    if (wire::is_tenant_name(name)) return {};
    return error{errc::invalid_argument, "must be a tenant name (1 to 64 letters, digits, '_', '.' or '-')"};
  });
  if (s.has("anonymous_tenant")) c.http_anonymous_tenant = anonymous;
  s.count("threads", c.http_threads, 1, 4096);
  s.count("max_body_bytes", c.http_max_body_bytes, 1024, int64_t{1} << 30);
  s.text("tls_cert", c.http_tls_cert);
  s.text("tls_key", c.http_tls_key);
  s.both_or_neither("tls_cert", "tls_key");
}

void read_model(const section& s, serve_config& c) {
  s.text("path", c.model_path);
  s.choice("compute", c.compute, {"bf16", "f32"});
  s.choice("kernels", c.kernels, {"auto", "onednn", "hearth"});
}

void read_engine(const section& s, serve_config& c) {
  engine_config& e = c.engine;
  s.count("max_batched_tokens", e.max_batched_tokens, 1);
  s.count("max_seqs", e.max_seqs, 1);
  s.count("long_prefill_threshold", e.long_prefill_threshold, 0);
  s.count("max_partial_prefills", e.max_partial_prefills, 1);
  s.count("max_preemptions", e.max_preemptions, 0);
  s.choice("policy", e.policy, policy_names());
  s.count("max_waiting", e.max_waiting, 1);
  s.count("max_waiting_tokens", e.max_waiting_tokens, 1, std::numeric_limits<int64_t>::max());
  std::string mode = "colocated", handoff = "automatic";
  s.choice("mode", mode, {"colocated", "disaggregated"});
  e.mode = mode == "colocated" ? placement_mode::colocated : placement_mode::disaggregated;
  s.text("worker_cpus", e.worker_cpus);
  s.text("decode_cpus", e.decode_cpus);
  s.choice("kv_handoff", handoff, {"automatic", "share", "copy"});
  e.kv_handoff = handoff == "share"  ? kv_handoff_mode::share
                 : handoff == "copy" ? kv_handoff_mode::copy
                                     : kv_handoff_mode::automatic;
  s.count("threads_per_worker", e.threads_per_worker, 0, 1024);
  s.flag("local_worker", e.local_worker);
  s.count("step_timeout_ms", e.step_timeout_ms, 1, 3600000);
  s.count("kv_tokens", c.kv_tokens, 16, int64_t{1} << 32);
  s.choice("backend", c.backend, {"cpu", "cuda"});
  s.count("device", c.device, 0, 1023);
  s.choice("prefill_backend", c.prefill_backend, {"cpu", "cuda"});
  s.choice("decode_backend", c.decode_backend, {"cpu", "cuda"});
  for (const char* field : {"prefill_backend", "decode_backend"}) {
    if (s.has(field) && e.mode != placement_mode::disaggregated)
      s.refuse(field, "needs mode = \"disaggregated\" (a colocated engine has one backend: backend)");
  }
  s.entries("worker", {"endpoint", "credentials", "role"}, [&](const section& w) {
    const toml::node& at = w.required("endpoint");
    std::string text;
    w.text("endpoint", text);
    auto endpoint = parse_worker_endpoint(text);
    if (!endpoint) w.fail(&at, "endpoint", endpoint.error().message);
    w.text("credentials", endpoint->credentials);
    if (auto st = endpoint->check_reach(); !st) w.fail(&at, "endpoint", st.error().message);
    std::string role = "none";
    w.choice("role", role, {"prefill", "decode"});
    endpoint->role = role == "prefill"  ? worker_role::prefill
                     : role == "decode" ? worker_role::decode
                                        : worker_role::none;
    e.workers.push_back(std::move(*endpoint));
    if (auto st = check_workers(e.workers); !st) w.fail(&at, "", st.error().message);
    // The entries before passed: a refusal is this entry's.
    if (auto st = check_roles(e); !st) {
      if (w.has("role")) w.refuse("role", st.error().message);
      w.fail(&at, "", st.error().message);
    }
  });
}

}  // namespace

result<serve_config> parse_serve_config(std::string_view toml_text, std::string_view source) {
  serve_config c;
  try {
    const toml::table root = toml::parse(toml_text, source);
    only_known_sections(source, root);
    read_server(section(source, root, "server",
                        {"endpoint", "secret_key_file", "max_message_bytes", "heartbeat_ms",
                         "drain_timeout_s", "log_level"}),
                c);
    read_http(section(source, root, "http",
                      {"endpoint", "public", "anonymous_tenant", "threads", "max_body_bytes", "tls_cert",
                       "tls_key"}),
              c);
    read_model(section(source, root, "model", {"path", "compute", "kernels"}), c);
    read_engine(section(source, root, "engine",
                        {"max_batched_tokens",
                         "max_seqs",
                         "long_prefill_threshold",
                         "max_partial_prefills",
                         "max_preemptions",
                         "policy",
                         "max_waiting",
                         "max_waiting_tokens",
                         "mode",
                         "worker_cpus",
                         "decode_cpus",
                         "kv_handoff",
                         "local_worker",
                         "threads_per_worker",
                         "step_timeout_ms",
                         "kv_tokens",
                         "backend",
                         "device",
                         "prefill_backend",
                         "decode_backend",
                         "worker"}),
                c);
  } catch (const toml::parse_error& e) {
    return error{errc::malformed, std::string(source) + ":" + std::to_string(e.source().begin.line) + ": " +
                                      std::string(e.description())};
  } catch (const bad_config& e) {
    return error{errc::malformed, e.message};
  }
  auto tenants = parse_tenants(toml_text, key_rule::optional, source);
  if (!tenants) return tenants.error();
  c.engine.tenants = std::move(*tenants);
  return c;
}

result<serve_config> load_serve_config(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_serve_config(*text, path);
}

status<> check_tenant_keys(const serve_config& c) {
  if (c.development_mode()) return {};
  for (const auto& t : c.engine.tenants)
    if (t.key.empty())
      return error{errc::invalid_argument,
                   "tenant '" + t.name + "': key is missing (every tenant needs one with a server key)"};
  return {};
}

namespace {

// The fields of a tenant that differ between two versions of it, as "key, quota".
std::string changed_fields(const tenant_config& a, const tenant_config& b) {
  std::vector<std::string> f;
  if (a.key != b.key) f.push_back("key");
  if (a.http_key_sha256 != b.http_key_sha256) f.push_back("http key");
  if (a.cls != b.cls) f.push_back("class");
  if (a.weight != b.weight) f.push_back("weight");
  if (a.slo.ttft_ms != b.slo.ttft_ms || a.slo.itl_ms != b.slo.itl_ms ||
      a.slo.itl_quantile != b.slo.itl_quantile)
    f.push_back("slo");
  const tenant_quota &qa = a.quota, &qb = b.quota;
  if (qa.max_concurrent != qb.max_concurrent || qa.max_queued != qb.max_queued ||
      qa.max_prompt_tokens != qb.max_prompt_tokens || qa.tokens_per_minute != qb.tokens_per_minute)
    f.push_back("quota");
  if (a.share_prefix != b.share_prefix) f.push_back("share_prefix");
  if (a.admin != b.admin) f.push_back("admin");
  std::string out;
  for (const auto& x : f) out += (out.empty() ? "" : ", ") + x;
  return out;
}

const tenant_config* named(const std::vector<tenant_config>& ts, const std::string& name) {
  for (const auto& t : ts)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace

std::string describe_reload(const std::vector<tenant_config>& before, const std::vector<tenant_config>& after,
                            const std::string& policy_before, const std::string& policy_after) {
  std::vector<std::string> parts;
  if (policy_before != policy_after) parts.push_back("policy " + policy_before + " -> " + policy_after);
  std::string added, removed, changed;
  auto append = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  for (const auto& t : after) {
    const tenant_config* old = named(before, t.name);
    if (!old)
      append(added, t.name);
    else if (auto f = changed_fields(*old, t); !f.empty())
      append(changed, t.name + " (" + f + ")");
  }
  for (const auto& t : before)
    if (!named(after, t.name)) append(removed, t.name);
  if (!added.empty()) parts.push_back("tenants added: " + added);
  if (!removed.empty()) parts.push_back("removed: " + removed);
  if (!changed.empty()) parts.push_back("changed: " + changed);
  if (parts.empty())
    return "nothing changed (policy " + policy_after + ", " + std::to_string(after.size()) + " tenant(s))";
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace hearth::server
