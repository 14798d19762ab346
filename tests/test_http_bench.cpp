// The bench's HTTP target (bench/household/http_target.hpp) against the HTTP gateway on the micro
// model: 64 streams opened at once lose no token (each one's text is that of the request run
// alone), each request ends exactly once, each runs as the tenant its key names, and refusals
// reach the bench with their reason; its gauges come from /metrics.
#include <unistd.h>

#include <catch2/catch.hpp>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>

#include "bench/household/http_target.hpp"
#include "common/text_file.hpp"
#include "http_fixture.hpp"
#include "server/http/keys.hpp"

using namespace hearth;
using namespace hearth::test;
using namespace std::chrono_literals;

namespace {

// What the target reported, per request.
struct counting_sink final : household::bench_sink {
  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, size_t> tokens, ends;
  std::map<size_t, std::string> text;
  std::map<size_t, household::bench_outcome> outcome;
  size_t ended = 0;
  void on_token(size_t i) override {
    std::lock_guard lock(mu);
    ++tokens[i];
  }
  void on_text(size_t i, std::string_view piece) override {
    std::lock_guard lock(mu);
    text[i] += piece;
  }
  void on_end(size_t i, const household::bench_outcome& o) override {
    std::lock_guard lock(mu);
    ++ends[i];
    outcome[i] = o;
    ++ended;
    cv.notify_all();
  }
  bool wait_for(size_t n, std::chrono::seconds limit) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, limit, [&] { return ended >= n; });
  }
};

// The greedy completion of the raw `prompt` alone, run to `n` tokens (ignore_eos), as its stream's
// text: the oracle the streams are held to.
std::string oracle_to_length(backend& be, const std::string& prompt, uint32_t n) {
  request r;
  r.prompt = raw_prompt(prompt);
  r.max_tokens = n;
  r.sampling.temperature = 0;
  r.sampling.banned = micro().tok->end_of_generation_tokens();
  const auto ids = generate_alone(be, *micro().tok, r);
  REQUIRE(ids.size() == n);
  return streamed_text({ids.begin(), ids.end()});
}

}  // namespace

TEST_CASE("http bench target: 64 concurrent streams lose no token and each ends exactly once", "[http]") {
  engine_config cfg;
  cfg.max_seqs = 64;
  cfg.tenants = {{.name = "voice", .http_key_sha256 = http::sha256_hex("voice-key")},
                 {.name = "chat", .http_key_sha256 = http::sha256_hex("chat-key")}};
  auto s = http_served::start({.tenants = cfg.tenants}, cfg);
  auto t = household::http_target::connect(
      {.endpoint = "http://" + s.gw->endpoint(), .keys = {{"voice", "voice-key"}, {"chat", "chat-key"}}});
  REQUIRE(t.ok());
  auto sink = std::make_shared<counting_sink>();
  constexpr size_t n = 64;
  constexpr uint32_t max_tokens = 32;
  const char* tenants[] = {"voice", "chat"};
  for (size_t i = 0; i < n; ++i)
    (*t)->submit({.index = i,
                  .tenant = tenants[i % 2],
                  .prompt = "request " + std::to_string(i),
                  .max_tokens = max_tokens},
                 sink);
  REQUIRE(sink->wait_for(n, 60s));
  std::this_thread::sleep_for(100ms);  // a second terminal, were there one, would come now
  std::lock_guard lock(sink->mu);
  CHECK(sink->ended == n);
  auto be = micro().backend(1024);
  for (size_t i = 0; i < n; ++i) {
    INFO("request " << i);
    const household::bench_outcome& o = sink->outcome[i];
    CHECK(sink->ends[i] == 1);
    INFO(o.message);
    REQUIRE(o.kind == event_kind::done);
    // ignore_eos: every request runs to max_tokens, and the text of every token arrived, in order.
    // (A token whose text is held back, part of a character, arrives with the next one: fewer
    // chunks than tokens.)
    CHECK(o.use.completion_tokens == max_tokens);
    CHECK(sink->text[i] == oracle_to_length(*be, "request " + std::to_string(i), max_tokens));
    CHECK(sink->tokens[i] <= o.use.completion_tokens);
    CHECK(sink->tokens[i] > 0);
    CHECK(o.use.prompt_tokens == raw_prompt("request " + std::to_string(i)).size());
    // The server's timings reach the bench (the usage chunk's extension).
    CHECK(o.time.first_step_ms > 0);
    CHECK(o.time.queue_ms + o.time.prefill_ms + o.time.first_step_ms <= o.time.ttft_ms + 1);
  }
  // Each request ran as its key's tenant: the engine counted half of them, and their tokens, for each.
  for (const char* name : tenants) {
    const auto m = s.eng->metrics(std::string(name));
    REQUIRE(m.ok());
    REQUIRE(m->tenants.size() == 1);
    CHECK(m->tenants[0].done == n / 2);
    CHECK(m->tenants[0].completion_tokens == n / 2 * max_tokens);
  }
  CHECK(engine_idle(*s.eng));
}

TEST_CASE("http bench target: refusals reach the bench with their reason", "[http]") {
  engine_config cfg;
  cfg.tenants = {{.name = "voice", .http_key_sha256 = http::sha256_hex("voice-key")}};
  auto s = http_served::start({.tenants = cfg.tenants}, cfg);
  auto t = household::http_target::connect(
      {.endpoint = "http://" + s.gw->endpoint(), .keys = {{"voice", "voice-key"}}});
  REQUIRE(t.ok());
  auto sink = std::make_shared<counting_sink>();
  (*t)->submit({.index = 0, .tenant = "voice", .prompt = "too long", .max_tokens = 600},
               sink);                                                                         // > n_ctx 512
  (*t)->submit({.index = 1, .tenant = "nobody", .prompt = "no key", .max_tokens = 4}, sink);  // no key: 401
  REQUIRE(sink->wait_for(2, 20s));
  std::lock_guard lock(sink->mu);
  CHECK(sink->outcome[0].kind == event_kind::rejected);
  CHECK(sink->outcome[0].reason == reject_reason::too_long);
  CHECK(sink->outcome[1].kind == event_kind::rejected);
  CHECK_THAT(sink->outcome[1].message, Catch::Matchers::StartsWith("unauthorized"));
  CHECK(sink->tokens.empty());
}

TEST_CASE("http bench target: a bad endpoint or no server is an error naming it", "[http]") {
  auto bad = household::http_target::connect({.endpoint = "tcp://127.0.0.1:1", .keys = {}});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Matchers::Contains("http://HOST:PORT"));
  auto none = household::http_target::connect({.endpoint = "http://127.0.0.1:1", .keys = {}});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.error().message, Catch::Matchers::Contains("127.0.0.1:1"));
}

TEST_CASE("http bench target: --http-keys reads CLASS KEY lines, and names the line it cannot", "[http]") {
  const std::string path =
      std::filesystem::temp_directory_path() / ("hearth-http-keys-" + std::to_string(getpid()));
  REQUIRE(write_text_file(path, "# keys for the bench\nvoice  k1\n\nchat k2\n").ok());
  auto keys = household::read_http_keys(path);
  REQUIRE(keys.ok());
  CHECK(*keys == std::map<std::string, std::string>{{"voice", "k1"}, {"chat", "k2"}});
  REQUIRE(write_text_file(path, "voice k1\nchat\n").ok());
  auto bad = household::read_http_keys(path);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message, Catch::Matchers::Contains(path + ":2: expected CLASS KEY"));
  std::filesystem::remove(path);
}

TEST_CASE("http bench target: the gauges come from /metrics, read with an admin tenant's key", "[http]") {
  engine_config cfg;
  tenant_config voice{.name = "voice", .http_key_sha256 = http::sha256_hex("voice-key")};
  tenant_config house{.name = "house", .http_key_sha256 = http::sha256_hex("house-key")};
  house.admin = true;
  cfg.tenants = {voice, house};
  auto s = http_served::start({.tenants = cfg.tenants}, cfg, backend_script{.delay = 20ms});
  const std::string url = "http://" + s.gw->endpoint();
  auto t = household::http_target::connect(
      {.endpoint = url, .keys = {{"voice", "voice-key"}}, .metrics_key = "house-key"});
  REQUIRE(t.ok());
  auto sink = std::make_shared<counting_sink>();
  (*t)->submit({.index = 0, .tenant = "voice", .prompt = long_prompt(), .max_tokens = 300}, sink);  // 6 s
  REQUIRE(eventually([&] { return (*t)->gauges().running == 1; }));
  const household::target_gauges g = (*t)->gauges();
  CHECK(g.waiting == 0);
  CHECK(g.kv_total == s.eng->gauges()->kv.n_blocks);
  CHECK(g.kv_used > 0);
  CHECK(g.kv_used < g.kv_total);
  // Without the admin key /metrics is refused (403): the samples read as an idle server.
  auto blind = household::http_target::connect({.endpoint = url, .keys = {{"voice", "voice-key"}}});
  REQUIRE(blind.ok());
  CHECK((*blind)->gauges().kv_total == 0);
  (*t).reset();  // ends its stream: the request is cancelled
  CHECK(engine_idle(*s.eng));
  auto after = household::http_target::connect(
      {.endpoint = url, .keys = {{"voice", "voice-key"}}, .metrics_key = "house-key"});
  REQUIRE(after.ok());
  const household::target_gauges idle = (*after)->gauges();
  CHECK(idle.running == 0);
  CHECK(idle.kv_used == 0);
  CHECK(idle.kv_total == g.kv_total);
}
