// The scheduler's decisions driven directly, step by step, on a real CPU backend: concurrency
// changes no token, preemption recomputes exactly, the prefix cache serves only its own tenant,
// cancellations free every block.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "core/scheduler_core.hpp"
#include "core/step_runner.hpp"
#include "engine_fixture.hpp"
#include "kernels/null_backend.hpp"
#include "policies/fcfs.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;

namespace {

struct outcome {
  std::map<request_id, std::vector<token_id>> tokens;
  std::map<request_id, request_event> terminal;
  std::map<request_id, std::vector<step_seq>> calls;  // each request's part of every step run
  uint32_t max_step_tokens = 0;

  std::vector<token_id> tokens_of(request_id id) const {
    const auto it = tokens.find(id);
    return it == tokens.end() ? std::vector<token_id>{} : it->second;
  }
};

// Runs steps until no request is left; `between` may add or cancel requests before each step.
outcome drive(scheduler_core& core, step_runner& runner,
              const std::function<void(uint64_t, std::vector<request_event>&)>& between = {}) {
  outcome o;
  std::vector<request_event> events;
  auto collect = [&] {
    for (auto& e : events) {
      if (e.kind == event_kind::token) o.tokens[e.id].push_back(e.token);
      if (e.terminal()) {
        CHECK(o.terminal.count(e.id) == 0);  // exactly one terminal event
        o.terminal[e.id] = e;
      }
    }
    events.clear();
  };
  for (uint64_t n = 0;; ++n) {
    if (between) between(n, events);
    collect();
    const step st = core.plan(0.001 * static_cast<double>(n));
    if (st.seqs.empty()) {
      REQUIRE_FALSE(core.has_work());  // nothing runnable with work left would be a stall
      break;
    }
    o.max_step_tokens = std::max(o.max_step_tokens, st.n_tokens());
    const step_result r = runner.run(st);
    REQUIRE(r.error.empty());
    for (const step_seq& s : st.seqs) o.calls[s.id].push_back(s);
    core.complete(st, r, 0.001 * static_cast<double>(n) + 0.0005, events);
    collect();
  }
  return o;
}

request make_request(std::vector<token_id> prompt, uint32_t max_tokens, uint64_t seed,
                     std::string tenant = "t") {
  request r;
  r.tenant = std::move(tenant);
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  // Half greedy, half sampled: draws depend on (seed, index) only, so both must replay exactly.
  r.sampling = seed % 2 ? sampling_params{.temperature = 0}
                        : sampling_params{.temperature = 0.9f, .top_k = 40, .seed = seed};
  return r;
}

std::vector<request> mixed_requests(size_t n, const engine_model& m, std::mt19937_64& rng) {
  std::vector<request> rs;
  std::uniform_int_distribution<size_t> len(1, 90), gen(1, 24);
  for (size_t i = 0; i < n; ++i)
    rs.push_back(make_request(random_prompt(len(rng), 600, rng), static_cast<uint32_t>(gen(rng)), i));
  (void)m;
  return rs;
}

std::map<request_id, std::vector<token_id>> alone(const engine_model& m, const std::vector<request>& rs) {
  auto be = m.backend(512);
  std::map<request_id, std::vector<token_id>> out;
  for (size_t i = 0; i < rs.size(); ++i) out[i + 1] = generate_alone(*be, *m.tok, rs[i]);
  return out;
}

//! Every request of `o` but `cancelled` done with the tokens it draws alone in its own chunks, on a
//! fresh backend of kv_tokens positions in blocks of block_size (the engine's pool's shape).
void check_done_as_alone(const engine_model& m, const std::vector<request>& rs, const outcome& o,
                         uint64_t kv_tokens, uint32_t block_size, request_id cancelled = 0) {
  auto be = m.backend(kv_tokens, block_size);
  for (size_t i = 0; i < rs.size(); ++i) {
    const request_id id = i + 1;
    if (id == cancelled) continue;
    INFO("request " << id);
    CHECK(o.terminal.at(id).kind == event_kind::done);
    CHECK(o.tokens_of(id) == alone_in_its_chunks(*be, *m.tok, rs[i], o.calls.at(id)));
  }
}

}  // namespace

TEST_CASE("concurrent requests get exactly the tokens they get alone", "[scheduler_core]") {
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto rs = mixed_requests(32, *m, rng);
  struct budget {
    uint32_t tokens, threshold, partial, block;
  };
  for (const budget b :
       {budget{64, 16, 2, 16}, budget{256, 128, 4, 16}, budget{40, 0, 1, 8}, budget{512, 7, 8, 4}}) {
    INFO("budget " << b.tokens << " threshold " << b.threshold << " partial " << b.partial << " block "
                   << b.block);
    auto be = m->backend(8192, b.block);
    engine_config cfg{.max_batched_tokens = b.tokens,
                      .max_seqs = 32,
                      .long_prefill_threshold = b.threshold,
                      .max_partial_prefills = b.partial};
    scheduler_core core(cfg, *m->tok, 512, be->kv().n_blocks(), b.block, make_policy("fcfs"));
    for (size_t i = 0; i < rs.size(); ++i) core.add(i + 1, rs[i], 0);
    step_runner runner(*be);
    const outcome o = drive(core, runner);
    CHECK(o.max_step_tokens <= b.tokens);
    check_done_as_alone(*m, rs, o, 8192, b.block);
    CHECK(core.kv().stats().used == 0);
  }
}

TEST_CASE("a pool too small for the load preempts, recomputes and changes no token", "[scheduler_core]") {
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs;
  for (size_t i = 0; i < 12; ++i) rs.push_back(make_request(random_prompt(40 + i * 3, 600, rng), 40, i));
  auto be = m->backend(160, 8);  // 20 blocks: two or three requests at a time
  engine_config cfg{
      .max_batched_tokens = 128, .max_seqs = 12, .long_prefill_threshold = 32, .max_preemptions = 2};
  scheduler_core core(cfg, *m->tok, 512, be->kv().n_blocks(), 8, make_policy("fcfs"));
  for (size_t i = 0; i < rs.size(); ++i) core.add(i + 1, rs[i], 0);
  step_runner runner(*be);
  const outcome o = drive(core, runner);
  CHECK(core.gauges().preemptions > 0);
  for (const auto& [id, e] : o.terminal) CHECK(e.preemptions <= cfg.max_preemptions);
  check_done_as_alone(*m, rs, o, 160, 8);
  CHECK(core.kv().stats().used == 0);
}

TEST_CASE("requests handed to another core mid-step carry on with the tokens they would have drawn",
          "[scheduler_core]") {
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto rs = mixed_requests(16, *m, rng);
  engine_config cfg{.max_batched_tokens = 64, .max_seqs = 16, .long_prefill_threshold = 16};
  auto be_a = m->backend(2048), be_b = m->backend(2048);
  scheduler_core a(cfg, *m->tok, 512, be_a->kv().n_blocks(), 16, make_policy("fcfs"));
  scheduler_core b(cfg, *m->tok, 512, be_b->kv().n_blocks(), 16, make_policy("fcfs"));
  for (size_t i = 0; i < rs.size(); ++i) a.add(i + 1, rs[i], 0);
  step_runner runner_a(*be_a), runner_b(*be_b);
  std::vector<request_event> events;
  outcome o;  // what a streamed, then what b streams
  const auto steps_on_a = std::uniform_int_distribution<int>(1, 12)(rng);
  for (int n = 0; n < steps_on_a; ++n) {
    const step st = a.plan(0);
    a.complete(st, runner_a.run(st), 0, events);
    for (const step_seq& s : st.seqs) o.calls[s.id].push_back(s);
  }
  // A step in flight when a's worker is lost, one of its requests cancelled meanwhile.
  const step lost = a.plan(0);
  REQUIRE_FALSE(lost.seqs.empty());
  const request_id cancelled = lost.seqs.front().id;
  REQUIRE(a.cancel(cancelled, 0, events));
  for (request_id id : a.ids()) a.hand_over(id, b, 0, events);
  CHECK_FALSE(a.has_work());
  CHECK(a.kv().stats().used == 0);
  for (const auto& e : events) {
    if (e.kind == event_kind::token) o.tokens[e.id].push_back(e.token);
    if (e.terminal()) o.terminal[e.id] = e;
  }
  const outcome on_b = drive(b, runner_b);
  for (const auto& [id, tokens] : on_b.tokens)
    o.tokens[id].insert(o.tokens[id].end(), tokens.begin(), tokens.end());
  for (const auto& [id, calls] : on_b.calls)
    o.calls[id].insert(o.calls[id].end(), calls.begin(), calls.end());
  for (const auto& [id, e] : on_b.terminal) {
    CHECK(o.terminal.count(id) == 0);  // exactly one terminal event
    o.terminal[id] = e;
  }
  REQUIRE(o.terminal.size() == rs.size());
  CHECK(o.terminal.at(cancelled).kind == event_kind::cancelled);
  check_done_as_alone(*m, rs, o, 2048, 16, cancelled);
  CHECK(b.kv().stats().used == 0);
}

TEST_CASE("a core says what its requests still need and what its prefix cache would serve",
          "[scheduler_core]") {
  const auto m = engine_model::make();
  std::mt19937_64 rng(3);
  auto be = m->backend(2048);
  scheduler_core core(engine_config{}, *m->tok, 512, be->kv().n_blocks(), 16, make_policy("fcfs"));
  const request r = make_request(random_prompt(40, 600, rng), 6, 1, "voice");
  core.add(1, r, 0);
  core.add(2, make_request(random_prompt(10, 600, rng), 4, 1, "voice"), 0);
  CHECK(core.load().prefill_tokens == 50);
  CHECK(core.load().decode_tokens == 10);
  CHECK(core.load().sequences == 2);
  CHECK(core.cached_tokens(r, 3) == 0);
  step_runner runner(*be);
  drive(core, runner);
  CHECK(core.load().sequences == 0);
  CHECK(core.cached_tokens(r, 3) == 32);  // two full blocks; the last token is always computed
  request other = r;
  other.tenant = "docs";
  CHECK(core.cached_tokens(other, 3) == 0);  // another tenant's salt
  request secret = r;
  secret.share_prefix = false;
  CHECK(core.cached_tokens(secret, 3) == 0);
}

TEST_CASE("a shared system prompt hits the prefix cache, for its own tenant only", "[scheduler_core]") {
  const auto m = engine_model::make();
  std::mt19937_64 rng(5);
  const auto system = random_prompt(64, 600, rng);
  auto with_system = [&](std::string tenant, uint64_t seed) {
    return make_request(with_random_tail(system, 5, 600, rng), 8, seed, std::move(tenant));
  };
  const std::vector<request> rs = {with_system("voice", 1), with_system("voice", 2), with_system("docs", 3),
                                   with_system("voice", 5)};
  const auto expected = alone(*m, rs);
  auto be = m->backend(2048);
  scheduler_core core(engine_config{}, *m->tok, 512, be->kv().n_blocks(), 16, make_policy("fcfs"));
  step_runner runner(*be);
  // One after another, so each finds what the previous ones left.
  std::map<request_id, request_event> ends;
  for (size_t i = 0; i < rs.size(); ++i) {
    core.add(i + 1, rs[i], 0);
    const outcome o = drive(core, runner);
    CHECK(o.tokens_of(i + 1) == expected.at(i + 1));
    ends[i + 1] = o.terminal.at(i + 1);
  }
  CHECK(ends[1].use.cached_tokens == 0);
  CHECK(ends[2].use.cached_tokens == 64);  // four full blocks of the system prompt
  CHECK(ends[3].use.cached_tokens == 0);   // another tenant's salt
  CHECK(ends[4].use.cached_tokens == 64);
  CHECK(core.kv().stats().hits >= 8);
  CHECK(core.gauges().prefill_tokens < 4 * 69);
}

TEST_CASE("requests cancelled at random moments free every block", "[scheduler_core]") {
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  auto be = m->backend(4096, 8);
  engine_config cfg{.max_batched_tokens = 96, .max_seqs = 16, .long_prefill_threshold = 24};
  scheduler_core core(cfg, *m->tok, 512, be->kv().n_blocks(), 8, make_policy("fcfs"));
  step_runner runner(*be);
  const size_t n = 300;  // the engine test runs 1000 through the actors
  std::vector<request> rs = mixed_requests(n, *m, rng);
  size_t added = 0;
  std::uniform_int_distribution<size_t> pick(1, n);
  const outcome o = drive(core, runner, [&](uint64_t, std::vector<request_event>& events) {
    for (int k = 0; k < 12 && added < n; ++k, ++added) core.add(added + 1, rs[added], 0);
    for (int k = 0; k < 6; ++k) core.cancel(pick(rng), 0, events);  // queued, running or long gone
  });
  REQUIRE(o.terminal.size() == n);
  size_t cancelled = 0;
  for (const auto& [id, e] : o.terminal) cancelled += e.kind == event_kind::cancelled;
  CHECK(cancelled > 30);
  CHECK(core.kv().stats().used == 0);
  CHECK(core.gauges().waiting + core.gauges().running == 0);
}

TEST_CASE("a cancel ends a request in every state, at once or when its step completes", "[scheduler_core]") {
  const auto m = engine_model::make();
  std::mt19937_64 rng(11);
  auto be = m->backend(2048);
  engine_config cfg{
      .max_batched_tokens = 64, .max_seqs = 8, .long_prefill_threshold = 32, .max_partial_prefills = 1};
  scheduler_core core(cfg, *m->tok, 512, be->kv().n_blocks(), 16, make_policy("fcfs"));
  step_runner runner(*be);
  std::vector<request_event> events;
  auto cancelled_now = [&](request_id id) {
    events.clear();
    REQUIRE(core.cancel(id, 0, events));
    return events.size() == 1 && events[0].kind == event_kind::cancelled && events[0].id == id;
  };
  core.add(1, make_request(random_prompt(100, 600, rng), 8, 1), 0);  // cancelled while its chunk computes
  core.add(2, make_request(random_prompt(100, 600, rng), 8, 1), 0);  // cancelled between two chunks
  core.add(3, make_request(random_prompt(5, 600, rng), 30, 1), 0);   // cancelled while decoding
  core.add(4, make_request(random_prompt(5, 600, rng), 30, 1), 0);   // cancelled while queued
  step s1 = core.plan(0);  // 1 takes the only partial-prefill slot; 3 and 4 start (one chunk each)
  REQUIRE(s1.seqs.size() == 3);
  events.clear();
  REQUIRE(core.cancel(1, 0, events));
  CHECK(events.empty());  // busy: it ends when the step completes
  core.complete(s1, runner.run(s1), 0, events);
  REQUIRE(events.size() >= 1);
  CHECK(events[0].id == 1);
  CHECK(events[0].kind == event_kind::cancelled);
  step s2 = core.plan(0);  // 3 and 4 decode; 2 starts its prefill
  core.complete(s2, runner.run(s2), 0, events);
  CHECK(cancelled_now(2));  // mid-prefill, not busy
  step s3 = core.plan(0);
  REQUIRE(std::ranges::find(s3.seqs, 3, &step_seq::id) != s3.seqs.end());
  events.clear();
  REQUIRE(core.cancel(3, 0, events));
  core.complete(s3, runner.run(s3), 0, events);
  CHECK(std::ranges::count_if(
            events, [](const request_event& e) { return e.id == 3 && e.kind == event_kind::token; }) == 0);
  CHECK(std::ranges::count_if(events, [](const request_event& e) {
          return e.id == 3 && e.kind == event_kind::cancelled;
        }) == 1);
  CHECK(cancelled_now(4));
  CHECK_FALSE(core.cancel(4, 0, events));  // gone: a second cancel is a no-op
  CHECK_FALSE(core.has_work());
  CHECK(core.kv().stats().used == 0);
}

// fcfs with a fixed cap on prefill tokens per step, standing in for a decode-protecting policy.
class capped_fcfs final : public policy {
 public:
  std::string_view name() const override { return "capped"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override {
    return inner_.order_waiting(s);
  }
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> c) const override {
    return inner_.pick_victim(s, c);
  }
  std::optional<uint32_t> prefill_cap(const policy_snapshot& s) const override {
    CHECK(s.max_batched_tokens == 128);
    return 10;
  }

 private:
  fcfs_policy inner_;
};

TEST_CASE("a policy's prefill cap limits prefill tokens per step, not decodes", "[scheduler_core]") {
  const auto m = engine_model::make();
  std::mt19937_64 rng(13);
  std::vector<request> rs;
  for (int i = 0; i < 6; ++i) rs.push_back(make_request(random_prompt(37, 600, rng), 12, 1));
  const auto expected = alone(*m, rs);
  auto be = m->backend(2048);
  engine_config cfg{.max_batched_tokens = 128, .max_seqs = 8};
  scheduler_core core(cfg, *m->tok, 512, be->kv().n_blocks(), 16, std::make_unique<capped_fcfs>());
  for (size_t i = 0; i < rs.size(); ++i) core.add(i + 1, rs[i], 0);
  step_runner runner(*be);
  std::vector<request_event> events;
  std::map<request_id, std::vector<token_id>> got;
  while (core.has_work()) {
    const step st = core.plan(0);
    uint32_t prefill = 0;
    for (const auto& e : st.seqs)
      prefill += e.tokens.size() > 1 || !e.sample ? static_cast<uint32_t>(e.tokens.size()) : 0;
    CHECK(prefill <= 10);
    core.complete(st, runner.run(st), 0, events);
  }
  for (const auto& e : events) {
    if (e.kind == event_kind::token) got[e.id].push_back(e.token);
  }
  for (const auto& [id, want] : expected) CHECK(got[id] == want);
  CHECK(core.step_time().per_token_ms >= 0);
}

// Two tenants weighted 1:3 flood the engine, the light one first; which finish first?
std::vector<std::string> first_finishers(const std::string& policy_name, size_t n_first) {
  const auto m = engine_model::make();
  auto hp = read_hparams(m->file);
  REQUIRE(hp.ok());
  auto be = null_backend::create(*hp, 512, 16, 100);
  REQUIRE(be.ok());
  engine_config cfg{
      .max_batched_tokens = 64, .max_seqs = 4, .long_prefill_threshold = 64, .max_partial_prefills = 1};
  cfg.tenants = {tenant_config{.name = "light", .weight = 1}, tenant_config{.name = "heavy", .weight = 3}};
  scheduler_core core(cfg, *m->tok, 512, 512, 16, make_policy(policy_name));
  std::vector<std::string> tenant_of(81);
  for (request_id id = 1; id <= 80; ++id) {
    tenant_of[id] = id <= 40 ? "light" : "heavy";
    core.add(id, make_request(std::vector<token_id>(32, 7), 4, 1, tenant_of[id]),
             0.001 * static_cast<double>(id));
  }
  step_runner runner(**be);
  std::vector<request_event> events;
  std::vector<std::string> order;
  while (core.has_work() && order.size() < n_first) {
    const step st = core.plan(1);
    core.complete(st, runner.run(st), 1, events);
    for (const auto& e : events) {
      if (e.terminal()) order.push_back(tenant_of[e.id]);
    }
    events.clear();
  }
  return order;
}

TEST_CASE("configured tenants reach the policies: vtc shares service by weight, fcfs does not",
          "[scheduler_core]") {
  auto count = [](const std::vector<std::string>& v, const char* t) { return std::ranges::count(v, t); };
  const auto fair = first_finishers("vtc", 40);
  CAPTURE(fair);
  CHECK(count(fair, "heavy") >= 26);  // 3:4 of 40 = 30, give or take the requests in flight
  CHECK(count(fair, "light") >= 6);
  const auto fifo = first_finishers("fcfs", 40);
  CHECK(count(fifo, "light") >= 36);  // arrival order: the light tenant's flood came first
}

TEST_CASE("stop strings end generation before the match and hide it", "[scheduler_core]") {
  const auto m = engine_model::make();
  std::mt19937_64 rng(9);
  request r = make_request(random_prompt(12, 600, rng), 40, 1);
  auto be = m->backend(1024);
  const auto full = generate_alone(*be, *m->tok, r);
  REQUIRE(full.size() >= 6);
  // The text as streamed (a stream decoder renders broken UTF-8 as decode() may not).
  auto streamed_text = [&](std::span<const token_id> ids) {
    stream_decoder d(*m->tok);
    std::string t;
    for (token_id id : ids) t += d.push(id);
    return t + d.flush();
  };
  const std::string text = streamed_text(full);
  // A stop string that starts inside the fourth token's text.
  const std::string before = streamed_text(std::span(full).first(3));
  REQUIRE(text.size() > before.size() + 1);
  r.stop = {text.substr(before.size() + 1, 3)};
  scheduler_core core(engine_config{}, *m->tok, 512, be->kv().n_blocks(), 16, make_policy("fcfs"));
  core.add(1, r, 0);
  step_runner runner(*be);
  std::string streamed;
  std::vector<request_event> events;
  while (core.has_work()) {
    const step st = core.plan(0);
    core.complete(st, runner.run(st), 0, events);
  }
  for (const auto& e : events) streamed += e.text;
  CHECK(events.back().finish == finish_reason::stop);
  CHECK(streamed == text.substr(0, text.find(r.stop[0])));
}

TEST_CASE("TTFT splits into queue wait, earlier prefill chunks and the step that drew the first token",
          "[scheduler_core]") {
  const auto m = engine_model::make();
  auto hp = read_hparams(m->file);
  REQUIRE(hp.ok());
  auto be = null_backend::create(*hp, 64, 16, 100);
  REQUIRE(be.ok());
  // 40 prompt tokens in chunks of 16: steps planned at 10, 20, 30 ms, each completing 5 ms later.
  engine_config cfg{.max_batched_tokens = 64, .max_seqs = 4, .long_prefill_threshold = 16};
  scheduler_core core(cfg, *m->tok, 512, 64, 16, make_policy("fcfs"));
  core.add(1, make_request(std::vector<token_id>(40, 7), 3, 1), 0);
  step_runner runner(**be);
  std::vector<request_event> events;
  for (double t = 0.010; core.has_work(); t += 0.010) {
    const step st = core.plan(t);
    core.complete(st, runner.run(st), t + 0.005, events);
  }
  REQUIRE(events.back().kind == event_kind::done);
  const timings& tm = events.back().time;
  CHECK(tm.queue_ms == Approx(10));
  CHECK(tm.prefill_ms == Approx(20));
  CHECK(tm.first_step_ms == Approx(5));
  CHECK(tm.ttft_ms == Approx(tm.queue_ms + tm.prefill_ms + tm.first_step_ms));
}
