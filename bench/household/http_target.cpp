#include "bench/household/http_target.hpp"

#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "clients/cpp/replies.hpp"
#include "common/text_file.hpp"

namespace hearth::household {

namespace {

using json = nlohmann::json;

// A stream may wait in the server's queue for as long as a run drains: the gateway writes
// nothing before its first token, so the read timeout must not end it (stopping does).
constexpr time_t read_timeout_s = 3600;
constexpr time_t connect_timeout_s = 5;
constexpr size_t max_error_body = 4096;

struct host_port {
  std::string host;
  int port = 0;
};

result<host_port> split_endpoint(const std::string& endpoint) {
  constexpr std::string_view scheme = "http://";
  const std::string_view rest = std::string_view(endpoint).substr(std::min(endpoint.size(), scheme.size()));
  const size_t colon = rest.rfind(':');
  if (!endpoint.starts_with(scheme) || colon == std::string_view::npos || colon == 0)
    return error{errc::invalid_argument, "http endpoint " + endpoint + ": expected http://HOST:PORT"};
  std::string host(rest.substr(0, colon));
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  const std::string port(rest.substr(colon + 1));
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 1 || p > 65535)
    return error{errc::invalid_argument, "http endpoint " + endpoint + ": the port must be 1-65535"};
  return host_port{std::move(host), static_cast<int>(p)};
}

// One /v1/completions stream as it arrives, in pieces of any size: server-sent events, each
// `data: JSON` (a text chunk, the usage chunk with the server's timings, or an error) until
// `data: [DONE]`.
class completion_reader {
 public:
  //! Reads what `bytes` complete; calls on_token(text) for every chunk of text.
  template <class OnToken>
  void feed(std::string_view bytes, OnToken on_token) {
    buf_.append(bytes);
    size_t at = 0;
    for (size_t end; !ended_ && (end = buf_.find("\n\n", at)) != std::string::npos; at = end + 2)
      event(std::string_view(buf_).substr(at, end - at), on_token);
    buf_.erase(0, at);
  }
  bool ended() const { return ended_; }
  //! The outcome once ended; else the stream broke off (`why`).
  bench_outcome outcome(const std::string& why) const {
    return ended_ ? outcome_ : failed_outcome("transport", "the stream broke off: " + why, true);
  }

 private:
  template <class OnToken>
  void event(std::string_view e, OnToken on_token) {
    if (!e.starts_with("data: ")) return;  // a comment or another field: nothing of ours
    e.remove_prefix(6);
    if (e == "[DONE]") {
      ended_ = true;
      return;
    }
    const json j = json::parse(e, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return fail("protocol", "an event is not a JSON object");
    if (j.contains("error")) {
      const json& err = client::object_field(j, "error");
      return fail(client::field<std::string>(err, "code").value_or("error"),
                  client::field<std::string>(err, "message").value_or(""));
    }
    const json& choices = j.contains("choices") && j["choices"].is_array() ? j["choices"] : json::array();
    const std::string text =
        choices.empty() ? "" : client::field<std::string>(choices[0], "text").value_or("");
    if (!text.empty()) on_token(text);
    if (j.contains("usage") && j["usage"].is_object()) read_usage(j);
  }

  void read_usage(const json& j) {
    const json& u = client::object_field(j, "usage");
    const json& t = client::object_field(j, "timings");
    auto ms = [&](const char* key) { return client::field<double>(t, key).value_or(0); };
    outcome_.use = {client::field<uint32_t>(u, "prompt_tokens").value_or(0),
                    client::field<uint32_t>(u, "completion_tokens").value_or(0),
                    client::field<uint32_t>(client::object_field(u, "prompt_tokens_details"), "cached_tokens")
                        .value_or(0)};
    outcome_.time = {ms("queue_ms"),      ms("ttft_ms"),     ms("prefill_ms"),
                     ms("first_step_ms"), ms("mean_itl_ms"), ms("e2e_ms")};
  }

  void fail(std::string_view code, std::string_view message) {
    outcome_ = failed_outcome(code, message, true);
    ended_ = true;
  }

  std::string buf_;
  bench_outcome outcome_;  // done until an error says otherwise
  bool ended_ = false;
};

// A reply refused before its stream (an OpenAI error object), as a refusal with its code.
bench_outcome refused(int status, const std::string& body) {
  const json j = json::parse(body, nullptr, false);
  const json& err = j.is_object() ? client::object_field(j, "error") : json::object();
  return failed_outcome(client::field<std::string>(err, "code").value_or("http_" + std::to_string(status)),
                        client::field<std::string>(err, "message").value_or(body.substr(0, 200)), false);
}

// The value of the unlabelled sample `name` in Prometheus text; 0 when it is not there.
double sample_of(std::string_view text, std::string_view name) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ' ')
      return std::strtod(std::string(line.substr(name.size() + 1)).c_str(), nullptr);
    at = end + 1;
  }
  return 0;
}

uint32_t count_of(std::string_view text, std::string_view name) {
  return static_cast<uint32_t>(sample_of(text, name));
}

struct job {
  size_t index;
  std::string body, key;
  std::shared_ptr<bench_sink> sink;
};

}  // namespace

struct http_target::impl {
  http_target_options opt;
  host_port hp;
  std::string model;

  std::mutex mu;  // guards what follows
  std::condition_variable cv;
  std::deque<job> jobs;
  size_t idle = 0;  // workers waiting for a job
  std::vector<std::thread> workers;
  std::set<httplib::Client*> clients;  // every worker's, for stop
  bool stopping = false;

  std::mutex metrics_mu;  // the gauges' sampler and figures(): one exchange at a time
  std::unique_ptr<httplib::Client> metrics_client;

  // GET /metrics; empty when it cannot be read.
  std::string metrics() {
    std::lock_guard lock(metrics_mu);
    if (!metrics_client) {
      metrics_client = std::make_unique<httplib::Client>(make_client());
      metrics_client->set_read_timeout(connect_timeout_s, 0);
    }
    httplib::Headers headers;
    if (!opt.metrics_key.empty()) headers.emplace("Authorization", "Bearer " + opt.metrics_key);
    const auto res = metrics_client->Get("/metrics", headers);
    return res && res->status == 200 ? res->body : std::string();
  }

  httplib::Client make_client() const {
    httplib::Client c(hp.host, hp.port);
    c.set_keep_alive(true);
    c.set_tcp_nodelay(true);  // the request is two writes (head, body): never wait for an ACK between them
    c.set_connection_timeout(connect_timeout_s, 0);
    c.set_read_timeout(read_timeout_s, 0);
    return c;
  }

  // One worker: takes jobs until stopped, each one exchange on its own keep-alive connection.
  void work() {
    httplib::Client c = make_client();
    std::unique_lock lock(mu);
    clients.insert(&c);
    for (;;) {
      ++idle;
      cv.wait(lock, [&] { return stopping || !jobs.empty(); });
      --idle;
      if (stopping) break;
      job j = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      exchange(c, j);
      lock.lock();
    }
    clients.erase(&c);
  }

  void exchange(httplib::Client& c, const job& j) {
    int status = 0;
    std::string error_body;
    completion_reader rd;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = j.body;
    req.set_header("Content-Type", "application/json");
    if (!j.key.empty()) req.set_header("Authorization", "Bearer " + j.key);
    req.response_handler = [&](const httplib::Response& res) {
      status = res.status;
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (status != 200) {
        error_body.append(data, std::min(n, max_error_body - std::min(max_error_body, error_body.size())));
        return true;
      }
      rd.feed({data, n}, [&](const std::string& text) {
        j.sink->on_text(j.index, text);
        j.sink->on_token(j.index);
      });
      return true;
    };
    const httplib::Result res = c.send(req);
    if (status != 0 && status != 200) return j.sink->on_end(j.index, refused(status, error_body));
    if (!res && !rd.ended()) {
      const bool started = status == 200;
      return j.sink->on_end(j.index,
                            started ? rd.outcome(httplib::to_string(res.error()))
                                    : failed_outcome("transport", httplib::to_string(res.error()), false));
    }
    j.sink->on_end(j.index, rd.outcome("the connection closed before data: [DONE]"));
  }
};

http_target::http_target(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

http_target::~http_target() {
  impl* p = impl_.get();
  {
    std::lock_guard lock(p->mu);
    p->stopping = true;
  }
  p->cv.notify_all();
  // A worker may be about to open its exchange when it is stopped: shut the sockets down until
  // every worker has left.
  for (;;) {
    {
      std::lock_guard lock(p->mu);
      if (p->clients.empty()) break;
      for (httplib::Client* c : p->clients) c->stop();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (std::thread& t : p->workers) t.join();
}

result<std::unique_ptr<http_target>> http_target::connect(http_target_options opt) {
  auto hp = split_endpoint(opt.endpoint);
  if (!hp) return hp.error();
  auto p = std::make_unique<impl>();
  p->opt = std::move(opt);
  p->hp = *hp;
  httplib::Client c = p->make_client();
  c.set_read_timeout(connect_timeout_s, 0);
  httplib::Headers headers;
  if (!p->opt.keys.empty()) headers.emplace("Authorization", "Bearer " + p->opt.keys.begin()->second);
  const auto res = c.Get("/v1/models", headers);
  if (!res)
    return error{errc::io, "http endpoint " + p->opt.endpoint + ": GET /v1/models failed (" +
                               httplib::to_string(res.error()) + ")"};
  const json j = json::parse(res->body, nullptr, false);
  const bool listed = res->status == 200 && j.is_object() && j.contains("data") && j["data"].is_array() &&
                      !j["data"].empty() && j["data"][0].is_object();
  if (!listed)
    return error{errc::io, "http endpoint " + p->opt.endpoint + ": GET /v1/models answered " +
                               std::to_string(res->status) + " " + res->body.substr(0, 200)};
  p->model = client::field<std::string>(j["data"][0], "id").value_or("");
  return std::unique_ptr<http_target>(new http_target(std::move(p)));
}

target_gauges http_target::gauges() {
  const std::string m = impl_->metrics();
  return {count_of(m, "hearth:num_requests_waiting"), count_of(m, "hearth:num_requests_running"),
          count_of(m, "hearth:kv_cache_used_blocks"), count_of(m, "hearth:kv_cache_capacity_blocks")};
}

server_figures http_target::figures() {
  server_figures f;
  f.preemptions = static_cast<uint64_t>(sample_of(impl_->metrics(), "hearth:num_preemptions_total"));
  return f;
}

void http_target::submit(const bench_request& r, std::shared_ptr<bench_sink> sink) {
  // As the ZeroMQ target: greedy, and every request runs to its max_tokens.
  const json body = {{"model", impl_->model},
                     {"prompt", r.prompt},
                     {"max_tokens", r.max_tokens},
                     {"temperature", 0},
                     {"ignore_eos", true},
                     {"stream", true},
                     {"stream_options", {{"include_usage", true}}}};
  const auto key = impl_->opt.keys.find(r.tenant);
  job j{r.index, body.dump(), key == impl_->opt.keys.end() ? std::string() : key->second, std::move(sink)};
  std::lock_guard lock(impl_->mu);
  impl_->jobs.push_back(std::move(j));
  // Every queued job has a worker of its own: a request never waits for another's stream.
  if (impl_->jobs.size() > impl_->idle) impl_->workers.emplace_back([p = impl_.get()] { p->work(); });
  impl_->cv.notify_one();
}

result<std::map<std::string, std::string>> read_http_keys(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  std::map<std::string, std::string> keys;
  std::istringstream in(*text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string name, key, extra;
    if (!(words >> name) || name.starts_with('#')) continue;
    if (!(words >> key) || (words >> extra))
      return error{errc::invalid_argument, path + ":" + std::to_string(n) + ": expected CLASS KEY"};
    keys[name] = key;
  }
  return keys;
}

}  // namespace hearth::household
