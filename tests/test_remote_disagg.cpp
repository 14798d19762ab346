// A disaggregated pair with a side in `hearth worker` ([[engine.worker]] role): prefill there and
// decode here, prefill here and decode there, and both there. Each runs the greedy tokens one
// colocated engine here runs, ships exactly the blocks each prompt filled (one decode step copies
// them in: ceil(prompt / block_size) blocks of the model's block bytes), ends with no block in
// use and shuts down at once; a side killed mid-request ends every request once, with `internal`
// naming it.
#include <catch2/catch.hpp>

#include "remote_fixture.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;
using Catch::Matchers::Contains;

namespace {

using ms = std::chrono::milliseconds;

// Prompts of several blocks (and part-blocks); no end of generation, so every request decodes.
std::vector<request> prompts(std::mt19937_64& rng, uint32_t max_tokens) {
  std::vector<request> rs;
  for (uint32_t n : {5u, 40u, 17u, 90u, 33u, 16u}) {
    request r = greedy(random_prompt(n, 600, rng), max_tokens);
    r.ignore_eos = true;
    rs.push_back(std::move(r));
  }
  return rs;
}

// The same requests on one colocated engine here, a worker of this process: the oracle.
std::vector<std::vector<token_id>> colocated(const remote_fixture& f, const std::vector<request>& rs) {
  engine_config cfg;
  cfg.threads_per_worker = 1;
  auto e = engine::start(cfg, f.model->tok, [&f]() -> result<std::unique_ptr<backend>> {
    return std::unique_ptr<backend>(f.model->backend(16384));
  });
  REQUIRE(e.ok());
  event_queue events(**e);
  outcome o;
  const std::vector<request_id> ids = run_to_end(**e, events, rs, o);
  std::vector<std::vector<token_id>> out;
  for (request_id id : ids) out.push_back(o.tokens_of(id));
  return out;
}

// The exact bytes a pair ships for rs: each prompt's blocks, once, at its first decode step.
uint64_t expected_bytes(const remote_fixture& f, const std::vector<request>& rs) {
  uint64_t blocks = 0;
  for (const auto& r : rs) blocks += (r.prompt.size() + 15) / 16;
  return blocks * block_bytes(f);
}

}  // namespace

TEST_CASE(
    "a disaggregated pair with a remote side runs a colocated engine's tokens and ships each prompt once",
    "[worker][remote]") {
  remote_fixture f;
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<request> rs = prompts(rng, 12);
  const auto expected = colocated(f, rs);
  for (layout l : {layout{true, false}, layout{false, true}, layout{true, true}}) {
    INFO(name_of(l));
    worker_process a(f.path), b(f.path);
    auto e = start_pair(f, l, {a.port(), b.port()});
    REQUIRE(e.ok());
    REQUIRE((*e)->decode_worker() != nullptr);
    CHECK((*e)->handoff() == kv_handoff_mode::copy);
    std::optional<event_queue> events(std::in_place, **e);  // closed before the engine ends
    outcome o;
    const std::vector<request_id> ids = run_to_end(**e, *events, rs, o);
    events.reset();
    check_done_with(o, ids, expected);
    const auto g = (*e)->gauges();
    REQUIRE(g.ok());
    CHECK(g->kv_shipped_bytes == expected_bytes(f, rs));
    CHECK(g->kv_ship_ms > 0);
    CHECK(g->kv.used == 0);
    const auto t0 = std::chrono::steady_clock::now();
    e->reset();
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(3));
    CHECK(a.stop() == 0);
    CHECK(b.stop() == 0);
  }
}

TEST_CASE("a disaggregated pair refuses a remote side whose KV pool differs, naming both",
          "[worker][remote]") {
  remote_fixture f;
  worker_process w(f.path, 0, {"--kv-tokens", "8192"});
  const auto e = start_pair(f, {false, true}, {w.port()});
  REQUIRE_FALSE(e.ok());
  CHECK(e.error().code == errc::invalid_argument);
  CHECK_THAT(e.error().message, Contains("the prefill worker's KV pool (1024 blocks of 16 positions") &&
                                    Contains("and the decode worker tcp://127.0.0.1:" +
                                             std::to_string(w.port()) + "'s (512 blocks of 16 positions") &&
                                    Contains("differ"));
  CHECK(w.stop() == 0);
}

TEST_CASE("a remote side of a disaggregated pair killed mid-request: each request ends once, naming it",
          "[worker][remote]") {
  remote_fixture f;
  for (layout l : {layout{true, false}, layout{false, true}, layout{true, true}}) {
    INFO(name_of(l));
    // w is the side killed: with both remote, the decode side; the prefill side lives on.
    worker_process w(f.path);
    std::optional<worker_process> prefill;
    if (l.prefill_remote && l.decode_remote) prefill.emplace(f.path);
    auto e =
        start_pair(f, l, prefill ? std::vector<uint16_t>{prefill->port(), w.port()} : std::vector{w.port()});
    REQUIRE(e.ok());
    std::mt19937_64 rng(test_seed());
    std::vector<request> rs = prompts(rng, 400);
    std::optional<event_queue> events(std::in_place, **e);
    std::vector<request_id> ids;
    for (const auto& r : rs) ids.push_back((*e)->submit(r, events->sink()));
    outcome o;
    while (o.tokens.size() < 2) {  // two streaming: some decode, some may still prefill
      auto ev = events->next(ms(30000));
      REQUIRE(ev);
      record(*ev, o);
    }
    w.kill_hard();
    const auto t0 = std::chrono::steady_clock::now();
    collect(*events, rs.size(), o);  // each ends once (record checks), none hangs
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    events.reset();
    const std::string side = std::string(l.decode_remote ? "decode" : "prefill") +
                             " worker tcp://127.0.0.1:" + std::to_string(w.port());
    for (request_id id : ids) {
      const request_event& end = o.terminal.at(id);
      CHECK(end.kind == event_kind::error);
      CHECK(end.reason == reject_reason::internal);
      CHECK_THAT(end.message, Contains(side));
    }
    REQUIRE((*e)->failure());
    CHECK_THAT(*(*e)->failure(), Contains(side));
    const auto t1 = std::chrono::steady_clock::now();
    e->reset();
    CHECK(std::chrono::steady_clock::now() - t1 < std::chrono::seconds(3));
  }
}

// Not run by CTest (hidden tag): what shipping costs on the `small` preset in bf16, over
// loopback, one kernel thread a side. `test_remote_worker "[.measure]"` prints, per layout, the
// bytes shipped, the time getting them, and the requests' mean TTFT and the batch's wall time.
TEST_CASE("measure: KV shipping on the small preset", "[.measure]") {
  make_options opt{*find_preset("small"), tensor_type::bf16, 1, tokenizer_kind::bpe, 2048};
  remote_fixture f(engine_model::make(opt));
  auto make = [&f]() -> result<std::unique_ptr<backend>> {
    auto b = cpu_backend::load(f.model->file, {.compute = compute_type::bf16, .kv_tokens = 16384});
    if (!b) return b.error();
    return std::unique_ptr<backend>(std::move(*b));
  };
  std::mt19937_64 rng(1);
  std::vector<request> rs;
  for (int i = 0; i < 4; ++i) {
    request r = greedy(random_prompt(1024, 32000, rng), 16);
    r.ignore_eos = true;
    rs.push_back(std::move(r));
  }
  auto run = [&](const char* what, engine_config cfg) {
    cfg.threads_per_worker = 1;
    auto e = engine::start(cfg, f.model->tok, make, {}, {}, f.hello);
    REQUIRE(e.ok());
    std::optional<event_queue> events(std::in_place, **e);
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& r : rs) (*e)->submit(r, events->sink());
    outcome o;
    collect(*events, rs.size(), o);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events.reset();
    double ttft = 0;
    for (const auto& [id, end] : o.terminal) ttft += end.time.ttft_ms / static_cast<double>(rs.size());
    const auto g = (*e)->gauges().value();
    const double mb = static_cast<double>(g.kv_shipped_bytes) / 1e6;
    std::printf(
        "%-34s shipped %7.1f MB in %8.1f ms (%7.1f MB/s, %6.2f ms per 1k prompt tokens); mean TTFT %7.0f ms, "
        "wall %6.2f s\n",
        what, mb, g.kv_ship_ms, g.kv_ship_ms > 0 ? mb / (g.kv_ship_ms / 1e3) : 0.0,
        g.kv_ship_ms / (rs.size() * 1024 / 1000.0), ttft, wall);
  };
  worker_process a(f.path, 0, {"--compute", "bf16"}), b(f.path, 0, {"--compute", "bf16"});
  auto remote = [&](worker_role side, uint16_t port) {
    worker_endpoint w{"127.0.0.1", port};
    w.role = side;
    return w;
  };
  engine_config colocated, here, prefill_there, decode_there, both_there;
  run("colocated, one worker here", colocated);
  here.mode = prefill_there.mode = decode_there.mode = both_there.mode = placement_mode::disaggregated;
  here.kv_handoff = kv_handoff_mode::copy;
  run("disaggregated, both here (copy)", here);
  prefill_there.workers = {remote(worker_role::prefill, a.port())};
  run("disaggregated, prefill remote", prefill_there);
  decode_there.workers = {remote(worker_role::decode, a.port())};
  run("disaggregated, decode remote", decode_there);
  both_there.workers = {remote(worker_role::prefill, a.port()), remote(worker_role::decode, b.port())};
  run("disaggregated, both remote", both_there);
}
