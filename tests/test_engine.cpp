// The engine through its actors, on the `tiny` model: concurrency changes no token, every
// request ends exactly once whatever happens to it, nothing is left holding KV blocks.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <thread>

#include "engine_harness.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;

TEST_CASE("32 concurrent requests get the tokens of 32 sequential runs", "[engine]") {
  const engine_model& m = tiny();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs;
  std::uniform_int_distribution<size_t> len(1, 64), gen(1, 12);
  for (int i = 0; i < 32; ++i)
    rs.push_back(greedy(random_prompt(len(rng), 32000, rng), static_cast<uint32_t>(gen(rng))));
  auto alone = m.backend(8192);  // the engine's pool's shape: each replay reuses its block tables
  struct budget {
    uint32_t tokens, threshold, partial;
    placement_mode mode;
    kv_handoff_mode handoff = kv_handoff_mode::automatic;
  };
  const auto disaggregated = placement_mode::disaggregated, colocated = placement_mode::colocated;
  for (const budget b :
       {budget{64, 32, 2, colocated}, budget{512, 256, 4, colocated}, budget{48, 0, 1, colocated},
        budget{64, 32, 2, disaggregated}, budget{128, 0, 3, disaggregated, kv_handoff_mode::copy}}) {
    INFO("budget " << b.tokens << " threshold " << b.threshold << " partial " << b.partial
                   << (b.mode == disaggregated ? " disaggregated" : " colocated")
                   << (b.handoff == kv_handoff_mode::copy ? " copy" : ""));
    const bool split = b.mode == disaggregated;  // prefill on one core, decode on the other
    step_log log;
    auto e = start_engine({.max_batched_tokens = b.tokens,
                           .max_seqs = 32,
                           .long_prefill_threshold = b.threshold,
                           .max_partial_prefills = b.partial,
                           .mode = b.mode,
                           .worker_cpus = split ? "0" : "",
                           .decode_cpus = split ? "1" : "",
                           .kv_handoff = b.handoff},
                          8192, 16, m, log.hooks());
    // One NUMA node here: automatic hand-off shares; copy is forced to exercise it.
    if (split)
      CHECK(e->handoff() ==
            (b.handoff == kv_handoff_mode::copy ? kv_handoff_mode::copy : kv_handoff_mode::share));
    event_queue self(*e);
    outcome o;
    const std::vector<request_id> ids = run_to_end(*e, self, rs, o);
    // Sequential runs in the chunks the engine gave each (engine_fixture.hpp: against a one-shot
    // prefill, HEARTH_TEST_SEED=16316252603246985031 flipped a greedy near-tie).
    for (size_t i = 0; i < rs.size(); ++i) {
      INFO("request " << i);
      CHECK(o.terminal.at(ids[i]).kind == event_kind::done);
      CHECK(o.tokens_of(ids[i]) == alone_in_its_chunks(*alone, *m.tok, rs[i], log.of(ids[i])));
    }
    const auto g = *e->gauges();
    CHECK(g.kv.used == 0);
    // Every step reached the metrics, with its shape: the sums match the scheduler's counters.
    const step_metrics steps = e->metrics()->steps;
    CHECK(steps.seqs.count == g.steps);
    CHECK(steps.seqs.max <= 32);
    CHECK(steps.prefill_tokens.mean * static_cast<double>(g.steps) == Approx(g.prefill_tokens));
    CHECK(steps.decode_tokens.mean * static_cast<double>(g.steps) == Approx(g.decode_tokens));
    CHECK(steps.prefill_tokens.max <= b.tokens);
    CHECK(steps.decode_tokens.max <= 32);
    CHECK(steps.step_ms.p50 > 0);
  }
}

TEST_CASE("a decode worker with a backend of its own gets its blocks by copy and changes no token",
          "[engine]") {
  const engine_model& m = tiny();
  std::mt19937_64 rng(7);
  std::vector<request> rs;
  for (int i = 0; i < 8; ++i) rs.push_back(greedy(random_prompt(20 + 5 * i, 32000, rng), 8));
  std::vector<std::vector<token_id>> expected;
  {
    auto be = m.backend(1024);
    for (const auto& r : rs) expected.push_back(generate_alone(*be, *m.tok, r));
  }
  // The decode side's factory stands for another device's: a second backend, not a share.
  std::atomic<int> decode_loads{0};
  auto make = [&m]() -> result<std::unique_ptr<backend>> {
    return std::unique_ptr<backend>(m.backend(8192));
  };
  auto make_decode = [&]() -> result<std::unique_ptr<backend>> {
    ++decode_loads;
    return std::unique_ptr<backend>(m.backend(8192));
  };
  engine_config cfg{
      .mode = placement_mode::disaggregated, .worker_cpus = "0", .decode_cpus = "1", .threads_per_worker = 1};
  auto e = engine::start(cfg, m.tok, make, {}, make_decode);
  if (!e) FAIL(e.error().message);
  CHECK(decode_loads == 1);
  CHECK((*e)->handoff() == kv_handoff_mode::copy);
  REQUIRE((*e)->decode_worker() != nullptr);
  CHECK((*e)->decode_worker()->device == "cpu");
  event_queue self(**e);
  outcome o;
  const std::vector<request_id> ids = run_to_end(**e, self, rs, o);
  for (size_t i = 0; i < rs.size(); ++i) CHECK(o.tokens_of(ids[i]) == expected[i]);
  CHECK((*e)->gauges()->kv.used == 0);

  cfg.kv_handoff = kv_handoff_mode::share;
  auto shared = engine::start(cfg, m.tok, make, {}, make_decode);
  REQUIRE_FALSE(shared.ok());
  CHECK_THAT(shared.error().message, Catch::Contains("kv_handoff = \"share\" needs one backend"));
  auto colocated = engine::start({.threads_per_worker = 1}, m.tok, make, {}, make_decode);
  REQUIRE_FALSE(colocated.ok());
  CHECK_THAT(colocated.error().message, Catch::Contains("needs mode = \"disaggregated\""));
}

TEST_CASE("1000 requests cancelled at random moments leave the pool free", "[engine]") {
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  auto e = start_engine(
      {.max_batched_tokens = 96, .max_seqs = 32, .long_prefill_threshold = 32, .max_partial_prefills = 4});
  event_queue self(*e);
  const size_t n = 1000, window = 16;
  // Mostly short prompts, one in five long enough to take several steps of prefill.
  std::uniform_int_distribution<size_t> short_len(1, 24), long_len(100, 200), gen(1, 12);
  std::bernoulli_distribution is_long(0.2);
  std::uniform_int_distribution<int> pause_us(0, 15000);
  // Each request is cancelled once it has seen a random number of events: 0 = right after
  // submitting (queued), 1 = after `accepted` and a random pause (queued or mid-prefill),
  // more = mid-decode; some finish first.
  std::map<request_id, uint32_t> cancel_after, seen;
  outcome o;
  size_t submitted = 0;
  auto submit = [&] {
    const auto max_tokens = static_cast<uint32_t>(gen(rng));
    const size_t n_prompt = is_long(rng) ? long_len(rng) : short_len(rng);
    const request_id id = e->submit(greedy(random_prompt(n_prompt, 32000, rng), max_tokens), self.sink());
    // A long prompt is cancelled after `accepted` and a pause, to catch it mid-prefill.
    cancel_after[id] = n_prompt >= 100 ? 1 : std::uniform_int_distribution<uint32_t>(0, max_tokens + 2)(rng);
    ++submitted;
    if (cancel_after[id] == 0) e->cancel(id);
  };
  while (submitted < window) submit();
  while (o.terminal.size() < n) {
    auto next = self.next(std::chrono::seconds(120));
    REQUIRE(next);
    const request_event& ev = *next;
    if (ev.terminal()) {
      CHECK(o.terminal.emplace(ev.id, ev).second);
      if (submitted < n) submit();
      continue;
    }
    if (ev.kind == event_kind::token) o.tokens[ev.id].push_back(ev.token);
    if (++seen[ev.id] != cancel_after[ev.id]) continue;
    if (ev.kind == event_kind::accepted)
      std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
    e->cancel(ev.id);
  }
  size_t cancelled = 0, mid_stream = 0, queued = 0;
  for (const auto& [id, ev] : o.terminal) {
    if (ev.kind != event_kind::cancelled) continue;
    ++cancelled;
    mid_stream += o.tokens.count(id);
    queued += ev.time.queue_ms == ev.time.e2e_ms;
  }
  // Cancels landed while queued and mid-stream (the scheduler tests cover each state exactly;
  // here timing decides, so only their presence is checked).
  CAPTURE(cancelled, mid_stream, queued);
  CHECK(mid_stream > 0);
  CHECK(queued > 0);
  const auto g = *e->gauges();
  CHECK(g.kv.used == 0);
  CHECK(g.waiting + g.running == 0);
  const auto stats = *e->metrics();
  REQUIRE(stats.tenants.size() == 1);
  CHECK(stats.tenants[0].cancelled == cancelled);
  CHECK(stats.tenants[0].done + stats.tenants[0].cancelled == n);
}

TEST_CASE("bad requests are rejected early with a typed reason", "[engine]") {
  auto e = start_engine({.max_waiting_tokens = 300}, 2048);
  event_queue self(*e);
  std::mt19937_64 rng(3);
  std::map<request_id, reject_reason> want;
  want[e->submit(greedy({}, 4), self.sink())] = reject_reason::bad_request;
  want[e->submit(greedy({1, 32000}, 4), self.sink())] = reject_reason::bad_request;
  want[e->submit(greedy({1, 2}, 0), self.sink())] = reject_reason::bad_request;
  request hot = greedy({1, 2}, 4);
  hot.sampling.temperature = -1;
  want[e->submit(hot, self.sink())] = reject_reason::bad_request;
  want[e->submit(greedy(random_prompt(400, 32000, rng), 200), self.sink())] =
      reject_reason::too_long;  // context 512
  want[e->submit(greedy(random_prompt(310, 32000, rng), 10), self.sink())] =
      reject_reason::queue_full;  // > 300 queued tokens
  outcome o;
  collect(self, want.size(), o);
  for (const auto& [id, reason] : want) {
    INFO("request " << id);
    CHECK(o.terminal.at(id).kind == event_kind::rejected);
    CHECK(o.terminal.at(id).reason == reason);
    CHECK_FALSE(o.terminal.at(id).message.empty());
    CHECK(o.accepted.count(id) == 0);
  }
  const auto stats = *e->metrics();
  REQUIRE(stats.tenants.size() == 1);
  CHECK(stats.tenants[0].rejected[static_cast<size_t>(reject_reason::bad_request)] == 4);
}

TEST_CASE("shutdown ends every admitted request and refuses new ones", "[engine]") {
  auto e = start_engine({});
  event_queue self(*e);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 20; ++i) e->submit(greedy(random_prompt(50, 32000, rng), 100), self.sink());
  e->shutdown();
  const request_id late = e->submit(greedy({1, 2, 3}, 4), self.sink());
  outcome o;
  collect(self, 21, o);
  CHECK(o.terminal.at(late).kind == event_kind::rejected);
  CHECK(o.terminal.at(late).reason == reject_reason::shutting_down);
  for (const auto& [id, ev] : o.terminal) {
    if (id == late) continue;
    CHECK((ev.kind == event_kind::done || ev.reason == reject_reason::shutting_down));
  }
  CHECK(e->gauges()->kv.used == 0);
}

TEST_CASE("the worker pins itself to its cpuset, and a bad cpuset fails the start", "[engine]") {
  auto e = start_engine({.worker_cpus = "0"});
  CHECK(e->worker().cpus == "0");
  CHECK(e->worker().threads == 1);
  const engine_model& m = tiny();
  auto bad = engine::start({.worker_cpus = "9999"}, m.tok, [&m]() -> result<std::unique_ptr<backend>> {
    return std::unique_ptr<backend>(m.backend(512));
  });
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("9999"));
  CHECK_FALSE(engine::start({.policy = "nope"}, m.tok, {}));
}

TEST_CASE("ignore_eos runs a request to max_tokens, drawing what it drew until its end", "[engine]") {
  // The micro model (600 tokens): its greedy completions often end early, tiny's seldom do.
  static const auto micro = engine_model::make();
  const engine_model& m = *micro;
  auto be = m.backend(1024);
  // A prompt whose greedy completion ends early.
  request early;
  for (token_id t = 10; t < 590 && early.prompt.empty(); ++t) {
    request r = greedy({1, t, t + 1}, 64);
    if (generate_alone(*be, *m.tok, r).size() < 32) early = r;
  }
  REQUIRE_FALSE(early.prompt.empty());
  const auto until_eos = generate_alone(*be, *m.tok, early);
  auto e = start_engine({}, 8192, 16, m);
  event_queue self(*e);
  const request_id plain = e->submit(early, self.sink());
  request forced = early;
  forced.ignore_eos = true;
  const request_id id = e->submit(forced, self.sink());
  outcome o;
  collect(self, 2, o);
  CHECK(o.terminal.at(plain).finish == finish_reason::eos);
  CHECK(o.terminal.at(plain).use.completion_tokens == until_eos.size());  // what was streamed
  const auto& done = o.terminal.at(id);
  CHECK(done.finish == finish_reason::length);
  CHECK(done.use.completion_tokens == 64);
  const auto tokens = o.tokens_of(id);
  REQUIRE(tokens.size() == 64);
  CHECK(std::vector<token_id>(tokens.begin(), tokens.begin() + static_cast<long>(until_eos.size())) ==
        until_eos);
  for (token_id t : tokens) CHECK_FALSE(m.tok->is_end_of_generation(t));
}
