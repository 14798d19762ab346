#include "server/http/gateway.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "server/http/front_door.hpp"

#include "actors/engine.hpp"
#include "server/endpoint.hpp"
#include "server/http/event_hub.hpp"
#include "server/http/keys.hpp"
#include "server/http/ollama.hpp"
#include "server/http/openai.hpp"
#include "server/http/prometheus.hpp"

namespace hearth::http {

namespace {

// How long a reply's thread waits on its channel before it looks again at the server's state;
// events wake it at once.
constexpr auto channel_wait = std::chrono::milliseconds(200);
// An idle keep-alive connection holds a pool thread: let it go after this long.
constexpr time_t keep_alive_s = 2;

enum class route { ollama_chat, ollama_generate, openai_chat, openai_completion };

bool is_openai(route r) {
  return r == route::openai_chat || r == route::openai_completion;
}

struct host_port {
  std::string host;
  int port = 0;  // 0: any free port
};

// HOST:PORT (or [V6]:PORT), its port already checked by check_endpoint_port.
host_port split_endpoint(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  std::string host = endpoint.substr(0, colon), port = endpoint.substr(colon + 1);
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {host, port == "*" ? 0 : std::stoi(port)};
}

uint64_t random_seed() {
  thread_local std::mt19937_64 draw{std::random_device{}()};
  return draw() & ((uint64_t{1} << 53) - 1);  // within the protocol's seed range
}

// One request's reply while it is written: its channel, its format, and what is left of it.
struct reply_state {
  request_id rid = 0;
  std::shared_ptr<event_channel> channel;
  std::unique_ptr<reply_format> format;
  std::optional<tool_call_stream> calls = {};  // a request with tools: the answer's calls split out
  std::vector<request_event> pending = {};     // taken from the channel, not yet written
  bool started = false, ended = false;
};

// What a piece of the answer writes: its text, then the calls it completed.
void write_piece(reply_format& format, const assistant_reply& piece, std::string& out) {
  if (!piece.content.empty()) out += format.token(piece.content);
  if (!piece.calls.empty()) out += format.calls(piece.calls);
}

// Where the engine's failure listener finds the gateway: the engine may outlive it, so the
// listener holds this slot, which stop() empties.
struct failure_slot {
  std::mutex m;
  std::function<void(const std::string&)> on_failure;
};

// cpp-httplib's HTTPS server (OpenSSL) when the options name a certificate, else plain HTTP.
std::unique_ptr<httplib::Server> make_server(const gateway_options& opt) {
  if (opt.tls_cert_file.empty()) return std::make_unique<httplib::Server>();
  return std::make_unique<httplib::SSLServer>(opt.tls_cert_file.c_str(), opt.tls_key_file.c_str());
}

api_error error_from(const request_event& e) {
  server::client_error err = server::error_of(e);
  return {http_status(err.code), std::move(err)};
}

}  // namespace

status<> check_http_endpoint(const gateway_options& opt) {
  if (opt.tls_cert_file.empty() != opt.tls_key_file.empty())
    return error{errc::invalid_argument,
                 "http endpoint " + opt.endpoint + ": TLS needs a certificate and a key file"};
  // The gateway's HOST:PORT has no scheme (HTTP or HTTPS follows from the TLS files): with one,
  // the host would read as "http" and be refused as non-loopback, which misleads.
  if (const auto scheme = opt.endpoint.find("://"); scheme != std::string::npos)
    return error{errc::invalid_argument,
                 "http endpoint " + opt.endpoint + ": write HOST:PORT without a scheme (" +
                     opt.endpoint.substr(scheme + 3) + "); HTTPS is [http] tls_cert and tls_key"};
  const std::string tcp = "tcp://" + opt.endpoint;
  if (auto st = server::check_endpoint_port(tcp); !st)
    return error{errc::invalid_argument, "http endpoint " + opt.endpoint + ": " + st.error().message};
  const key_table keys(opt.tenants, opt.anonymous_tenant);
  if (!server::is_local_endpoint(tcp) && !opt.allow_public && !(keys.keyed() && !keys.anonymous_allowed()))
    return error{errc::invalid_argument,
                 "http endpoint " + opt.endpoint +
                     ": a non-loopback address needs HTTP keys (tenants with http_key_sha256 and no "
                     "anonymous_tenant) or [http].public = true"};
  return {};
}

struct gateway::impl {
  engine& eng;
  gateway_options opt;
  std::unique_ptr<httplib::Server> server = make_server(opt);
  httplib::Server& svr = *server;
  std::thread listener;
  std::string endpoint;
  int port = 0;
  // Shared with the event sink, which may hand over an event after the gateway is gone.
  std::shared_ptr<event_hub> hub = std::make_shared<event_hub>();
  std::shared_ptr<failure_slot> failure_listener = std::make_shared<failure_slot>();
  std::unique_ptr<event_sink> sink;
  api_limits limits;
  chat_format chat = chat_format::plain;  // the served model's family: how its calls are written
  std::atomic<bool> draining{false}, stopped{false};
  std::atomic<int> active{0};  // replies not yet fully handed to their connection

  mutable std::mutex m;  // guards what follows: reloads and the engine's failure come from other threads
  key_table keys;
  std::vector<tenant_config> tenants;
  std::optional<std::string> failure;

  impl(engine& e, gateway_options o)
      : eng(e), opt(std::move(o)), keys(opt.tenants, opt.anonymous_tenant), tenants(opt.tenants) {
    limits = {opt.model.name, opt.model.n_vocab, opt.model.n_ctx};
  }

  void log(const std::string& line) const {
    if (opt.log) opt.log(line);
  }

  // ---- replies that are not a generation ----

  static void send_json(httplib::Response& res, const std::string& body, int status = 200) {
    res.status = status;
    res.set_content(body, "application/json");
  }

  void refuse(httplib::Response& res, const api_error& e, bool openai) const {
    if (e.status == 429)  // whole seconds, rounded up; "retry at once" is never what a quota means
      res.set_header("Retry-After",
                     std::to_string(std::max<uint64_t>(1, (e.err.retry_after_ms + 999) / 1000)));
    send_json(res, openai ? openai_error(e) : dump({{"error", e.err.message}}), e.status);
  }

  // The tenant a request runs as, or the 401 it gets.
  result<std::string, api_error> tenant_of(const httplib::Request& req) const {
    std::string why;
    std::lock_guard lock(m);
    if (auto t = keys.tenant_of(req.get_header_value("Authorization"), why)) return *t;
    return api_error{401, {wire::code::unauthorized, why}};
  }

  // /metrics shows every tenant's figures: open while no tenant has an HTTP key (a loopback or
  // explicitly public endpoint), else for admin tenants only.
  std::optional<api_error> metrics_denied(const httplib::Request& req) const {
    {
      std::lock_guard lock(m);
      if (!keys.keyed()) return std::nullopt;
    }
    auto tenant = tenant_of(req);
    if (!tenant) return tenant.error();
    std::lock_guard lock(m);
    const auto t = std::find_if(tenants.begin(), tenants.end(),
                                [&](const tenant_config& c) { return c.name == *tenant; });
    if (t != tenants.end() && t->admin) return std::nullopt;
    return api_error{
        403,
        {wire::code::unauthorized, "tenant '" + *tenant + "' may not read /metrics (admin tenants may)"}};
  }

  // Whether the server can take a request now: not stopping, the engine alive.
  std::optional<api_error> unavailable() const {
    if (draining) return api_error{503, {wire::code::shutting_down, "the server is stopping"}};
    std::lock_guard lock(m);
    if (failure) return api_error{500, {wire::code::internal, "the engine failed: " + *failure}};
    return std::nullopt;
  }

  // ---- generations ----

  result<api_request, api_error> parse(route r, const std::string& body) const {
    switch (r) {
      case route::ollama_chat:
        return parse_ollama_chat(body, limits);
      case route::ollama_generate:
        return parse_ollama_generate(body, limits);
      case route::openai_chat:
        return parse_openai_chat(body, limits);
      case route::openai_completion:
        return parse_openai_completion(body, limits);
    }
    return bad_field("unknown route");
  }

  std::unique_ptr<reply_format> format_for(route r, const api_request& a, request_id rid) const {
    switch (r) {
      case route::ollama_chat:
        return ollama_format(true, a.model);
      case route::ollama_generate:
        return ollama_format(false, a.model);
      case route::openai_chat:
        return openai_format(true, a.model, "chatcmpl-" + std::to_string(rid), a.include_usage);
      case route::openai_completion:
        break;
    }
    return openai_format(false, a.model, "cmpl-" + std::to_string(rid), a.include_usage);
  }

  // The engine request for `a`, or why it cannot be made.
  result<request, api_error> engine_request_for(api_request& a, std::string tenant) const {
    if (a.random_seed) a.g.sampling.seed = random_seed();
    std::vector<tenant_config> listed;
    {
      std::lock_guard lock(m);
      listed = tenants;
    }
    request r = server::engine_request(a.g, std::move(tenant), listed);
    // Tokenized here, on this request's own thread: a long prompt holds up no other client.
    if (auto err =
            server::set_prompt(r, server::tokenize_prompt(eng.tok(), a.g), limits.model, limits.n_ctx)) {
      if (err->code == wire::code::bad_request) return bad_field(std::move(err->message));  // names the field
      return api_error{http_status(err->code), std::move(*err)};
    }
    return r;
  }

  void generate(route which, const httplib::Request& req, httplib::Response& res) {
    const bool openai = is_openai(which);
    if (auto busy = unavailable()) return refuse(res, *busy, openai);
    auto tenant = tenant_of(req);
    if (!tenant) return refuse(res, tenant.error(), openai);
    auto a = parse(which, req.body);
    if (!a) return refuse(res, a.error(), openai);
    const request_id rid = eng.next_id();
    auto st = std::make_shared<reply_state>(
        reply_state{.rid = rid, .channel = nullptr, .format = format_for(which, *a, rid)});
    if (!a->g.tools.empty()) st->calls.emplace(chat);
    if (a->load_only) {  // Ollama's "load the model": it is loaded
      request_event loaded;
      return send_json(res, st->format->whole({}, loaded) + (a->g.stream ? "\n" : ""));
    }
    auto r = engine_request_for(*a, std::move(*tenant));
    if (!r) return refuse(res, r.error(), openai);
    st->channel = hub->open(rid);
    eng.submit(rid, std::move(*r), *sink);
    // The first event decides the status line: accepted, or a refusal (429, 503, 400 ...).
    while (st->pending.empty()) st->pending = st->channel->take(channel_wait);
    if (st->pending.front().kind != event_kind::accepted)
      return refuse(res, error_from(st->pending.front()), openai);
    if (!a->g.stream) return whole_reply(*st, res, openai);
    stream_reply(st, res);
  }

  // Waits for the end and answers once: the text, or the error that ended it.
  void whole_reply(reply_state& st, httplib::Response& res, bool openai) {
    std::string text;
    for (;;) {
      for (const request_event& e : st.pending) {
        // `done` carries the text held back to the end (a partial character, a stop string's prefix).
        if (e.kind == event_kind::token || e.kind == event_kind::done) text += e.text;
        if (e.kind == event_kind::done)
          return send_json(
              res, st.format->whole(st.calls ? parse_tool_calls(chat, text) : assistant_reply{text}, e));
        if (e.terminal()) return refuse(res, error_from(e), openai);
      }
      st.pending = st.channel->take(channel_wait);
    }
  }

  // Appends what the pending events write; true once the request has ended.
  static bool write_pending(reply_state& st, std::string& out) {
    for (const request_event& e : st.pending) {
      // `done` carries the text held back to the end (a partial character, a stop string's prefix).
      if ((e.kind == event_kind::token || e.kind == event_kind::done) && !e.text.empty())
        write_piece(*st.format, st.calls ? st.calls->push(e.text) : assistant_reply{e.text}, out);
      if (!e.terminal()) continue;
      if (e.kind == event_kind::done && st.calls) write_piece(*st.format, st.calls->finish(), out);
      out += e.kind == event_kind::done ? st.format->end(e) : st.format->failed(error_from(e));
      st.ended = true;
      break;
    }
    st.pending.clear();
    return st.ended;
  }

  // Streams from this connection's thread: cpp-httplib calls the provider until it says done,
  // each call writing what came since the last as one chunk (a burst of tokens, one write). A
  // write that fails means the client left: the releaser then cancels the request, whose KV
  // blocks the engine frees at its next step.
  void stream_reply(const std::shared_ptr<reply_state>& st, httplib::Response& res) {
    ++active;
    res.set_chunked_content_provider(
        st->format->stream_type(),
        [st](size_t, httplib::DataSink& data) {
          std::string out;
          if (!st->started) out = st->format->start(), st->started = true;
          if (st->pending.empty()) st->pending = st->channel->take(channel_wait);
          const bool ended = write_pending(*st, out);
          if (!out.empty() && !data.write(out.data(), out.size())) return false;
          if (ended) data.done();
          return true;
        },
        [this, st](bool) {
          if (!st->ended) {
            hub->close(st->rid);
            eng.cancel(st->rid);
            log("http: a client left mid-stream; cancelled request " + std::to_string(st->rid));
          }
          --active;
        });
  }

  // ---- routes ----

  void routes() {
    svr.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("Ollama is running", "text/plain; charset=utf-8");
    });
    svr.Get("/health",
            [](const httplib::Request&, httplib::Response& res) { send_json(res, R"({"status":"ok"})"); });
    svr.Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
      if (auto busy = unavailable()) return send_json(res, dump({{"status", busy->err.message}}), 503);
      send_json(res, R"({"status":"ready"})");
    });
    svr.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
      if (auto denied = metrics_denied(req)) return refuse(res, *denied, false);
      auto figures = eng.metrics();
      if (!figures)
        return refuse(res, api_error{500, {wire::code::internal, figures.error().message}}, false);
      res.set_content(prometheus_text(*figures), prometheus_type);
    });
    svr.Get("/api/version", [](const httplib::Request&, httplib::Response& res) {
      send_json(res, dump({{"version", ollama_api_version}}));
    });
    info("/api/tags", false,
         [this](const httplib::Request&) { return result<std::string, api_error>(ollama_tags(opt.model)); });
    info("/api/ps", false,
         [this](const httplib::Request&) { return result<std::string, api_error>(ollama_ps(opt.model)); });
    info("/v1/models", true, [this](const httplib::Request&) {
      return result<std::string, api_error>(openai_models(opt.model));
    });
    const auto show = [this](const httplib::Request& req, httplib::Response& res) {
      auto tenant = tenant_of(req);
      if (!tenant) return refuse(res, tenant.error(), false);
      auto body = ollama_show(req.body, opt.model);
      if (!body) return refuse(res, body.error(), false);
      send_json(res, *body);
    };
    svr.Post("/api/show", limited_body(opt.max_body_bytes, show));
    const std::pair<const char*, route> generations[] = {{"/api/chat", route::ollama_chat},
                                                         {"/api/generate", route::ollama_generate},
                                                         {"/v1/chat/completions", route::openai_chat},
                                                         {"/v1/completions", route::openai_completion}};
    for (const auto& [path, which] : generations)
      svr.Post(path, limited_body(opt.max_body_bytes,
                                  [this, which = which](const httplib::Request& req, httplib::Response& res) {
                                    generate(which, req, res);
                                  }));
    // cpp-httplib calls this for every status >= 400, also those a route answered with a body.
    svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      const api_error e = front_door_error(res.status, req.method, req.path);
      res.set_content(req.path.starts_with("/v1/") ? openai_error(e) : dump({{"error", e.err.message}}),
                      "application/json");
    });
  }

  // A GET that reports on the server, behind the tenant check.
  template <class Body>
  void info(const char* path, bool openai, Body body) {
    svr.Get(path, [this, openai, body](const httplib::Request& req, httplib::Response& res) {
      auto tenant = tenant_of(req);
      if (!tenant) return refuse(res, tenant.error(), openai);
      auto text = body(req);
      if (!text) return refuse(res, text.error(), openai);
      send_json(res, *text);
    });
  }

  status<> bind() {
    if (auto st = check_http_endpoint(opt); !st) return st;
    if (!svr.is_valid())  // an SSLServer whose certificate or key did not load
      return error{errc::invalid_argument, "http endpoint " + opt.endpoint +
                                               ": cannot load the TLS certificate " + opt.tls_cert_file +
                                               " with the key " + opt.tls_key_file};
    const host_port hp = split_endpoint(opt.endpoint);
    const uint32_t n = std::max<uint32_t>(1, opt.threads);
    svr.new_task_queue = [n] { return new httplib::ThreadPool(n); };
    svr.set_payload_max_length(opt.max_body_bytes);
    svr.set_keep_alive_timeout(keep_alive_s);
    svr.set_tcp_nodelay(true);  // a token is a few bytes: never wait to fill a segment
    port = hp.port == 0 ? svr.bind_to_any_port(hp.host) : (svr.bind_to_port(hp.host, hp.port) ? hp.port : -1);
    if (port <= 0 || !widen_backlog(svr)) return error{errc::io, "cannot bind http endpoint " + opt.endpoint};
    const bool v6 = hp.host.find(':') != std::string::npos;
    endpoint = (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(port);
    return {};
  }

  void on_engine_failure(const std::string& why) {
    {
      std::lock_guard lock(m);
      failure = why;
    }
    log("http: the engine failed (" + why + "); ending every request with internal");
    hub->end_all(reject_reason::internal, "the engine failed: " + why);
  }

  // Waits up to `limit` for every reply to be handed over.
  void await_replies(std::chrono::milliseconds limit) const {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (active > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
};

gateway::gateway(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

result<std::unique_ptr<gateway>> gateway::start(engine& e, gateway_options opt) {
  auto p = std::make_unique<impl>(e, std::move(opt));
  // What admission checks against: the engine's context, not the file's training length.
  p->limits.n_ctx = e.worker().n_ctx;
  p->limits.n_vocab = static_cast<uint32_t>(e.tok().n_vocab());
  p->chat = detect_chat_format(e.tok().spec().chat_template).value_or(chat_format::plain);
  if (auto st = p->bind(); !st) return st.error();
  p->routes();
  impl* raw = p.get();
  p->sink = e.open_sink([hub = p->hub](request_event& ev) { hub->deliver(std::move(ev)); });
  p->failure_listener->on_failure = [raw](const std::string& why) { raw->on_engine_failure(why); };
  e.on_failure([slot = p->failure_listener](const std::string& why) {
    std::lock_guard lock(slot->m);
    if (slot->on_failure) slot->on_failure(why);
  });
  p->listener = std::thread([raw] { raw->svr.listen_after_bind(); });
  return std::unique_ptr<gateway>(new gateway(std::move(p)));
}

gateway::~gateway() {
  stop(std::chrono::milliseconds(0));
}

const std::string& gateway::endpoint() const {
  return impl_->endpoint;
}
std::string gateway::url() const {
  return (impl_->opt.tls_cert_file.empty() ? "http://" : "https://") + impl_->endpoint;
}

uint16_t gateway::port() const {
  return static_cast<uint16_t>(impl_->port);
}

void gateway::reconfigure(std::vector<tenant_config> tenants) {
  std::lock_guard lock(impl_->m);
  impl_->keys = key_table(tenants, impl_->opt.anonymous_tenant);
  impl_->tenants = std::move(tenants);
}

void gateway::drain() {
  impl_->draining = true;
}

bool gateway::busy() const {
  return impl_->active > 0;
}

void gateway::stop(std::chrono::milliseconds grace) {
  impl* p = impl_.get();
  if (p->stopped.exchange(true)) return;
  drain();
  p->await_replies(grace);
  for (request_id rid : p->hub->end_all(reject_reason::shutting_down, "the server is stopping"))
    p->eng.cancel(rid);
  // The replies just ended get their last bytes out before the connections close.
  p->await_replies(std::chrono::milliseconds(1000));
  p->svr.stop();
  p->listener.join();  // cpp-httplib's pool is joined too: no thread of it touches the engine now
  p->sink.reset();
  std::lock_guard lock(p->failure_listener->m);
  p->failure_listener->on_failure = nullptr;
}

}  // namespace hearth::http
