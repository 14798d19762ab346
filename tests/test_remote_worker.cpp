// A server's engine and `hearth worker` in two processes over loopback TCP (CAF's middleman
// answers a remote_actor to its own port with the local actor, so one process would prove
// nothing): the worker runs the same greedy tokens as a request alone on a backend of this
// process, outlives an engine and is joined by the next, refuses a server of another build or
// wire version with what differs, and exits 0 on SIGTERM. The other build is this test's own
// join_hello: the product has no switch to pretend to be another build.
#include <catch2/catch.hpp>

#include <thread>

#include "remote_fixture.hpp"
#include "tcp_relay.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;
using Catch::Matchers::Contains;

namespace {

// n greedy requests of prompts first_len, first_len + len_step, ..., every other one sampled
// instead (its draws depend on its seed and index only, so they must replay anywhere).
std::vector<request> half_sampled(uint32_t n, uint32_t first_len, uint32_t len_step, uint32_t max_tokens,
                                  std::mt19937_64& rng) {
  std::vector<request> rs;
  for (uint32_t i = 0; i < n; ++i) {
    request r = greedy(random_prompt(first_len + len_step * i, 600, rng), max_tokens);
    if (i % 2) r.sampling = {.temperature = 0.9f, .top_k = 40, .seed = rng()};
    rs.push_back(std::move(r));
  }
  return rs;
}

// Each request's tokens alone, on a backend of this process.
std::vector<std::vector<token_id>> alone(const remote_fixture& f, const std::vector<request>& rs) {
  std::vector<std::vector<token_id>> out;
  for (const auto& r : rs) out.push_back(generate_alone(*f.model->backend(8192), *f.model->tok, r));
  return out;
}

// Each request's tokens, every one run at once on `e`.
std::vector<std::vector<token_id>> run_all(engine& e, const std::vector<request>& rs) {
  event_queue events(e);
  outcome o;
  const std::vector<request_id> ids = run_to_end(e, events, rs, o);
  std::vector<std::vector<token_id>> out;
  for (request_id id : ids) {
    CHECK(o.terminal.at(id).kind == event_kind::done);
    out.push_back(o.tokens_of(id));
  }
  return out;
}

// One greedy request on `e`: the tokens it runs alone here. Its events' actor ends before `e` may.
void check_one_request(const remote_fixture& f, engine& e) {
  event_queue events(e);
  std::mt19937_64 rng(1);
  const request r = greedy(random_prompt(12, 600, rng), 8);
  const request_id id = e.submit(r, events.sink());
  outcome o;
  collect(events, 1, o);
  CHECK(o.tokens_of(id) == generate_alone(*f.model->backend(8192), *f.model->tok, r));
}

}  // namespace

TEST_CASE("a worker in another process runs the tokens a request alone runs here", "[worker]") {
  remote_fixture f;
  worker_process w(f.path);
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs;
  for (uint32_t n : {5u, 40u, 17u, 90u, 3u, 60u}) rs.push_back(greedy(random_prompt(n, 600, rng), 24));
  const auto expected = alone(f, rs);
  // Twice: the worker outlives the first engine, and the second joins it afresh.
  for (int round = 0; round < 2; ++round) {
    INFO("engine " << round);
    auto e = f.start(w.port(), f.hello);
    REQUIRE(e.ok());
    CHECK((*e)->worker().n_vocab == 600);
    CHECK(run_all(**e, rs) == expected);
    CHECK((*e)->gauges()->kv.used == 0);
  }
  CHECK(w.stop() == 0);
}

TEST_CASE("sampled requests draw the same tokens through a remote worker as through a local one",
          "[worker]") {
  // Every sampling field, the draw index and the penalty's window cross in each step: one lost
  // in an inspect() changes the draws.
  remote_fixture f;
  worker_process w(f.path);
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs;
  for (uint32_t i = 0; i < 5; ++i) {
    request r = greedy(random_prompt(8 + 13 * i, 600, rng), 20);
    r.sampling = {.temperature = 0.9f,
                  .top_k = 40,
                  .top_p = 0.95f,
                  .min_p = 0.02f,
                  .repetition_penalty = 1.3f,
                  .repeat_last_n = 16,
                  .seed = rng(),
                  .banned = {static_cast<token_id>(5 + i)}};
    rs.push_back(std::move(r));
  }
  engine_config local_cfg;
  local_cfg.threads_per_worker = 1;
  auto local = engine::start(local_cfg, f.model->tok, [&]() -> result<std::unique_ptr<backend>> {
    return std::unique_ptr<backend>(f.model->backend(16384));  // the worker's default pool
  });
  REQUIRE(local.ok());
  const auto expected = run_all(**local, rs);
  auto remote = f.start(w.port(), f.hello);
  REQUIRE(remote.ok());
  CHECK(run_all(**remote, rs) == expected);
}

TEST_CASE("a worker refuses a server of another build, wire version or model file", "[worker]") {
  remote_fixture f;
  worker_process w(f.path);
  join_hello other_build = f.hello;
  other_build.build = "0.0.0 (another)";
  auto e = f.start(w.port(), other_build);
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == errc::invalid_argument);
  CHECK_THAT(e.error().message,
             Contains("worker tcp://127.0.0.1:" + std::to_string(w.port()) + ": join refused: build " +
                      build_version() + " here, 0.0.0 (another) at the server"));
  join_hello other_wire = f.hello;
  other_wire.wire_version = worker_wire_version + 1;
  e = f.start(w.port(), other_wire);
  REQUIRE_FALSE(e.ok());
  CHECK_THAT(e.error().message,
             Contains("join refused: wire version " + std::to_string(worker_wire_version) + " here, " +
                      std::to_string(worker_wire_version + 1) + " at the server"));
  join_hello other_file = f.hello;
  other_file.model_sha256 = std::string(64, '0');
  e = f.start(w.port(), other_file);
  REQUIRE_FALSE(e.ok());
  CHECK_THAT(e.error().message, Contains("join refused: model file hash differs"));
  // Refusals leave it as it was: the right server joins.
  CHECK(f.start(w.port(), f.hello).ok());
  CHECK(w.stop() == 0);
}

TEST_CASE("a worker serves one server at a time, and the next once that one has gone", "[worker]") {
  remote_fixture f;
  worker_process w(f.path);
  auto first = f.start(w.port(), f.hello);
  REQUIRE(first.ok());
  // Two schedulers would hand out the same KV blocks: the second is refused once its retries,
  // for a server that may have died without a word, run out.
  const auto t0 = std::chrono::steady_clock::now();
  const auto second = f.start(w.port(), f.hello);
  REQUIRE_FALSE(second.ok());
  CHECK_THAT(second.error().message,
             Contains("busy: the worker serves the server on node ") && Contains("(one server at a time)"));
  CHECK(std::chrono::steady_clock::now() - t0 > std::chrono::seconds(5));
  // The first leaves while the next one asks: the next one joins.
  std::thread leaving([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    first->reset();
  });
  auto next = f.start(w.port(), f.hello);
  leaving.join();
  REQUIRE(next.ok());
  check_one_request(f, **next);
  next->reset();
  CHECK(w.stop() == 0);
}

TEST_CASE("a connect whose handshake outlasts a heartbeat is tried again", "[worker]") {
  // CAF's middleman drops a connection it opened at the first heartbeat that finds no bytes from
  // the peer yet (actors/worker_node.cpp): the worker's first answer is held past one.
  remote_fixture f;
  worker_process w(f.path);
  tcp_relay slow(w.port(), std::chrono::milliseconds(1500));
  auto e = f.start(slow.port(), f.hello);
  REQUIRE(e.ok());
  CHECK(slow.connections() >= 2);  // one more if a heartbeat also cuts a later try
  check_one_request(f, **e);
  e->reset();
  CHECK(w.stop() == 0);
}

TEST_CASE("two workers in other processes share the load and run the tokens requests alone run", "[worker]") {
  remote_fixture f;
  worker_process a(f.path), b(f.path);
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<request> rs = half_sampled(12, 5, 11, 16, rng);
  const auto expected = alone(f, rs);
  auto e = f.start({a.port(), b.port()}, f.hello);
  REQUIRE(e.ok());
  CHECK(run_all(**e, rs) == expected);
  const auto g = (*e)->gauges();
  REQUIRE(g.ok());
  REQUIRE(g->workers.size() == 2);
  for (const worker_gauges& w : g->workers) {
    INFO(w.name);
    CHECK(w.steps > 0);  // both took requests
    CHECK_FALSE(w.lost);
    CHECK(w.kv_blocks_used == 0);
    CHECK(w.step_ms > 0);
  }
  CHECK(g->workers[1].name == "worker tcp://127.0.0.1:" + std::to_string(b.port()));
  e->reset();
  CHECK(a.stop() == 0);
  CHECK(b.stop() == 0);
}

TEST_CASE("a worker killed mid-load: its requests finish on the other, each ending once", "[worker]") {
  remote_fixture f;
  worker_process a(f.path), b(f.path);
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs = half_sampled(10, 20, 7, 48, rng);
  for (request& r : rs)
    r.sampling.banned = f.model->tok->end_of_generation_tokens();  // running when one dies
  const auto expected = alone(f, rs);
  auto e = f.start({a.port(), b.port()}, f.hello);
  REQUIRE(e.ok());
  std::optional<event_queue> events(std::in_place, **e);  // closed before the engine ends
  std::vector<request_id> ids;
  for (const auto& r : rs) ids.push_back((*e)->submit(r, events->sink()));
  outcome o;
  // Once both have streamed tokens, the first dies.
  while (true) {
    auto ev = events->next(std::chrono::seconds(60));
    REQUIRE(ev);
    record(*ev, o);
    const auto g = (*e)->gauges();
    REQUIRE(g.ok());
    if (g->workers[0].steps > 4 && g->workers[1].steps > 4) {
      REQUIRE(g->workers[0].running + g->workers[0].waiting > 0);  // something to hand over
      break;
    }
  }
  a.kill_hard();
  collect(*events, rs.size(), o);
  events.reset();
  check_done_with(o, ids, expected);
  const auto g = (*e)->gauges();
  REQUIRE(g.ok());
  CHECK(g->workers[0].lost);
  CHECK_FALSE(g->workers[1].lost);
  CHECK(g->workers[1].kv_blocks_used == 0);
  CHECK((*e)->failure() == std::nullopt);
  // The survivor serves on.
  const std::vector<request> late = {greedy(random_prompt(9, 600, rng), 6)};
  CHECK(run_all(**e, late) == alone(f, late));
  e->reset();
  CHECK(b.stop() == 0);
}

TEST_CASE("a lost worker that comes back joins again and takes requests", "[worker]") {
  remote_fixture f;
  auto a = std::make_unique<worker_process>(f.path);
  worker_process b(f.path);
  const uint16_t port_a = a->port();
  auto e = f.start({port_a, b.port()}, f.hello);
  REQUIRE(e.ok());
  auto worker_a = [&] { return (*e)->gauges().value().workers.at(0); };
  a->kill_hard();
  auto wait_for = [&](bool lost) {
    for (int i = 0; i < 200 && worker_a().lost != lost; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return worker_a().lost == lost;
  };
  REQUIRE(wait_for(true));
  a = std::make_unique<worker_process>(f.path, port_a);  // restarted where it was
  REQUIRE(wait_for(false));
  CHECK(worker_a().steps == 0);  // a fresh pool: nothing of the old one is trusted
  std::mt19937_64 rng(17);
  const std::vector<request> rs = half_sampled(8, 10, 9, 12, rng);
  CHECK(run_all(**e, rs) == alone(f, rs));
  CHECK(worker_a().steps > 0);
  e->reset();
  CHECK(a->stop() == 0);
  CHECK(b.stop() == 0);
}

TEST_CASE("a worker here beside one in another process: both take requests, with the tokens alone gives",
          "[worker]") {
  remote_fixture f;
  worker_process b(f.path);
  engine_config cfg;
  cfg.workers = {{"127.0.0.1", b.port()}};
  cfg.local_worker = true;
  cfg.threads_per_worker = 1;
  auto e = engine::start(
      cfg, f.model->tok,
      [&]() -> result<std::unique_ptr<backend>> { return std::unique_ptr<backend>(f.model->backend(16384)); },
      {}, {}, f.hello);
  REQUIRE(e.ok());
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<request> rs = half_sampled(12, 6, 10, 16, rng);
  CHECK(run_all(**e, rs) == alone(f, rs));
  const auto g = (*e)->gauges();
  REQUIRE(g.ok());
  REQUIRE(g->workers.size() == 2);
  CHECK(g->workers[0].name == "worker");
  CHECK(g->workers[1].name == "worker tcp://127.0.0.1:" + std::to_string(b.port()));
  for (const worker_gauges& w : g->workers) {
    INFO(w.name);
    CHECK(w.steps > 0);
  }
  e->reset();
  CHECK(b.stop() == 0);
}
