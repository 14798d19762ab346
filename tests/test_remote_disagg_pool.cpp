// A disaggregated pair with a side in `hearth worker`, put through what its decode pool's
// bookkeeping must get right (scheduler_core: which blocks the decode side holds already):
// a pool small enough that running requests are preempted and recompute, and a prompt prefix
// that the prefix cache serves to later requests. In every layout each request runs the tokens
// it runs alone, and no block stays in use; a shared prefix crosses once.
#include <catch2/catch.hpp>

#include "remote_fixture.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;

namespace {

constexpr layout layouts[] = {{true, false}, {false, true}, {true, true}};

// The oracle: r alone on a backend of this process, its end of generation banned as ignore_eos
// has the engine ban it.
std::vector<token_id> alone(const remote_fixture& f, request r) {
  auto be = f.model->backend(512);
  if (r.ignore_eos) r.sampling.banned = f.model->tok->end_of_generation_tokens();
  return generate_alone(*be, *f.model->tok, r);
}

request greedy_no_eos(std::vector<token_id> prompt, uint32_t max_tokens) {
  request r = greedy(std::move(prompt), max_tokens);
  r.ignore_eos = true;
  return r;
}

}  // namespace

TEST_CASE(
    "a disaggregated pair with a remote side and a pool too small preempts and runs each request's tokens",
    "[worker][remote]") {
  // 16 blocks of 16 a side for 8 requests of 20-83 prompt tokens and 40 more each, every other
  // one after a 32-token prefix they share (a system prompt: 2 blocks the prefix cache serves
  // while one of them holds them or they stay cached): they start while their prompts fit and
  // outgrow the pool as they decode, so running requests are preempted and recompute.
  remote_fixture f;
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<token_id> system = random_prompt(32, 600, rng);
  std::vector<request> rs;
  std::vector<std::vector<token_id>> expected;
  // Each prompt's blocks cross at least once, the shared prefix's at least once in all.
  uint64_t least_blocks = 2;
  for (uint32_t i = 0; i < 8; ++i) {
    std::vector<token_id> prompt =
        with_random_tail(i % 2 ? system : std::vector<token_id>{}, 20 + 9 * i, 600, rng);
    least_blocks += (prompt.size() + 15) / 16 - (i % 2 ? 2 : 0);
    rs.push_back(greedy_no_eos(std::move(prompt), 40));
    expected.push_back(alone(f, rs.back()));
  }
  for (layout l : layouts) {
    INFO(name_of(l));
    const std::vector<std::string> pool = {"--kv-tokens", "256"};
    worker_process a(f.path, 0, pool), b(f.path, 0, pool);
    auto e = start_pair(f, l, {a.port(), b.port()}, 256);
    REQUIRE(e.ok());
    std::optional<event_queue> events(std::in_place, **e);  // closed before the engine ends
    outcome o;
    const std::vector<request_id> ids = run_to_end(**e, *events, rs, o);  // each ends once (record checks)
    events.reset();
    CHECK((*e)->failure().value_or("") == "");  // what went wrong, if the engine failed
    check_done_with(o, ids, expected);
    const auto g = (*e)->gauges();
    REQUIRE(g.ok());
    CHECK(g->preemptions > 0);  // else this test proves nothing beyond the one before
    CHECK(g->kv.used == 0);
    for (const worker_gauges& w : g->workers) CHECK(w.kv_blocks_used == 0);
    // Whole blocks, and a recomputed request's again where the prefill side wrote them anew: how
    // many depends on when each was preempted.
    CHECK(g->kv_shipped_bytes >= least_blocks * block_bytes(f));
    CHECK(g->kv_shipped_bytes % block_bytes(f) == 0);
    e->reset();
    CHECK(a.stop() == 0);
    CHECK(b.stop() == 0);
  }
}

TEST_CASE("a disaggregated pair with a remote side ships a cached prompt prefix once", "[worker][remote]") {
  // A 64-token prefix (4 blocks) under three prompts: r1 (+10: 5 blocks); r2 (+7: 5 blocks, 4 of
  // them the prefix) once r1 has streamed its first token, when the prefill side has cached r1's
  // prefix blocks and r1 may not have decoded yet; r3 (+20: 6 blocks, 4 the prefix) once both are
  // done, the prefix blocks unreferenced but still cached. The decode pool holds the prefix after
  // its first crossing, so 5 + 1 + 2 = 8 blocks cross, where 16 would without the cache.
  remote_fixture f;
  const uint64_t seed = test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<token_id> prefix = random_prompt(64, 600, rng);
  std::vector<request> rs;
  std::vector<std::vector<token_id>> expected;
  for (size_t tail : {10u, 7u, 20u}) {
    rs.push_back(greedy_no_eos(with_random_tail(prefix, tail, 600, rng), 8));
    expected.push_back(alone(f, rs.back()));
  }
  const uint64_t bytes = block_bytes(f);
  for (layout l : layouts) {
    INFO(name_of(l));
    worker_process a(f.path), b(f.path);
    auto e = start_pair(f, l, {a.port(), b.port()});
    REQUIRE(e.ok());
    std::optional<event_queue> events(std::in_place, **e);
    std::vector<request_id> ids = {(*e)->submit(rs[0], events->sink())};
    outcome o;
    while (o.tokens_of(ids[0]).empty()) {
      auto ev = events->next(std::chrono::seconds(30));
      REQUIRE(ev);
      record(*ev, o);
    }
    ids.push_back((*e)->submit(rs[1], events->sink()));
    collect(*events, 2, o);
    CHECK((*e)->gauges()->kv_shipped_bytes == (5 + 1) * bytes);
    ids.push_back((*e)->submit(rs[2], events->sink()));
    collect(*events, 3, o);
    events.reset();
    CHECK((*e)->failure().value_or("") == "");
    check_done_with(o, ids, expected);
    const auto g = (*e)->gauges();
    REQUIRE(g.ok());
    CHECK(g->kv_shipped_bytes == (5 + 1 + 2) * bytes);
    CHECK(g->kv.hits == 4 + 4);  // r2's prefix blocks and r3's, served by the prefix cache
    CHECK(g->kv.used == 0);
    e->reset();
    CHECK(a.stop() == 0);
    CHECK(b.stop() == 0);
  }
}
