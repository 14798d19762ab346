// A disaggregated pair with KV handoff by copy, its scheduler_core driven step by step on two real
// CPU backends, each with a pool of its own: the decode runner copies each decode step's copy_in
// blocks from the prefill pool. The two lanes run through step_lanes as the scheduler actor runs
// them, each step computed only when it completes, in an order the seed picks (in the engine two
// threads compute them at once). Beside the tokens, a shadow of both pools checks every block a
// decode step reads: the decode pool must hold the prefill pool's last write of it. Preemption
// (a victim dropped from a decode step it was already in, a block freed and given to another
// request, a recomputed request) and prefix-cached blocks are what these tests put it through.
#include <catch2/catch.hpp>

#include <functional>
#include <map>
#include <numeric>

#include "core/scheduler_core.hpp"
#include "core/step_lanes.hpp"
#include "core/step_runner.hpp"
#include "engine_fixture.hpp"
#include "test_seed.hpp"

using namespace hearth;
using namespace hearth::test;

namespace {

struct pair_outcome {
  std::map<request_id, std::vector<token_id>> tokens;
  std::map<request_id, request_event> terminal;
  uint64_t copied_blocks = 0;  // copy_in blocks over all decode steps: what a remote pair ships
};

// What each pool holds of each block: prefill_writes[b] counts the prefill steps that wrote into
// block b; decode_has[b] is that count as of b's last copy into the decode pool (-1: never copied).
struct pool_shadow {
  std::vector<int64_t> prefill_writes, decode_has;
  uint32_t block_size;

  pool_shadow(uint32_t n_blocks, uint32_t bs)
      : prefill_writes(n_blocks, 0), decode_has(n_blocks, -1), block_size(bs) {}

  void prefill_ran(const step& s) {
    for (const step_seq& e : s.seqs) {
      const size_t first = e.start_pos / block_size;
      const size_t end = (e.start_pos + e.tokens.size() + block_size - 1) / block_size;
      for (size_t i = first; i < end; ++i) ++prefill_writes[e.blocks[i]];
    }
  }
  // The copy, then the check: every block a decode step reads (those before start_pos) must
  // hold the prefill pool's latest write of it. A block the step starts at its first position is
  // the decode side's own from then on: nothing of the prefill side's is read from it.
  void decode_ran(const step& s) {
    for (const step_seq& e : s.seqs)
      for (uint32_t b : e.copy_in) decode_has[b] = prefill_writes[b];
    for (const step_seq& e : s.seqs) {
      const size_t filled = (e.start_pos + block_size - 1) / block_size;
      for (size_t i = 0; i < filled; ++i) {
        INFO("request " << e.id << " block " << e.blocks[i] << " (" << i << " of its table)");
        CHECK(decode_has[e.blocks[i]] == prefill_writes[e.blocks[i]]);
      }
      if (e.start_pos % block_size == 0) decode_has[e.blocks[filled]] = prefill_writes[e.blocks[filled]];
    }
  }
};

// Runs the pair until no request is left; `between` may add requests before each round.
pair_outcome drive_pair(scheduler_core& core, backend& prefill_be, backend& decode_be, std::mt19937_64& rng,
                        const std::function<void(uint64_t, const pair_outcome&)>& between = {}) {
  step_runner prefill(prefill_be), decode(decode_be, &prefill_be.kv());
  pool_shadow shadow(prefill_be.kv().n_blocks(), prefill_be.kv().layout().block_size);
  step_lanes lanes(placement_mode::disaggregated);
  pair_outcome o;
  std::vector<request_event> events;
  for (uint64_t n = 0;; ++n) {
    if (between) between(n, o);
    const double now = 0.001 * static_cast<double>(n);
    for (size_t lane : lanes.start(core, now))
      if (lanes.kind(lane) == step_kind::decode)
        for (const step_seq& e : lanes.in_flight(lane)->seqs) o.copied_blocks += e.copy_in.size();
    std::vector<size_t> busy;
    for (size_t lane = 0; lane < lanes.size(); ++lane)
      if (lanes.in_flight(lane)) busy.push_back(lane);
    if (busy.empty()) {
      REQUIRE_FALSE(core.has_work());  // nothing runnable with work left would be a stall
      break;
    }
    // One step completes; the other, if any, stays in flight and its lane is not planned again.
    const size_t lane = busy[std::uniform_int_distribution<size_t>(0, busy.size() - 1)(rng)];
    const step& s = *lanes.in_flight(lane);
    const bool is_decode = lanes.kind(lane) == step_kind::decode;
    const step_result r = is_decode ? decode.run(s) : prefill.run(s);
    REQUIRE(r.error.empty());
    is_decode ? shadow.decode_ran(s) : shadow.prefill_ran(s);
    lanes.finish(lane, r, core, now + 0.0005, events);
    for (auto& e : events) {
      if (e.kind == event_kind::token) o.tokens[e.id].push_back(e.token);
      if (e.terminal()) {
        CHECK(o.terminal.count(e.id) == 0);  // exactly one terminal event
        o.terminal[e.id] = e;
      }
    }
    events.clear();
  }
  return o;
}

engine_config pair_config(uint32_t max_batched_tokens, uint32_t max_seqs) {
  engine_config cfg{.max_batched_tokens = max_batched_tokens, .max_seqs = max_seqs};
  cfg.mode = placement_mode::disaggregated;
  cfg.kv_handoff = kv_handoff_mode::copy;
  return cfg;
}

request greedy_request(std::vector<token_id> prompt, uint32_t max_tokens) {
  request r;
  r.tenant = "t";
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  r.ignore_eos = true;
  return r;
}

std::vector<token_id> alone(const engine_model& m, const request& r) {
  auto be = m.backend(512);
  request without_eos = r;
  without_eos.sampling.banned = m.tok->end_of_generation_tokens();  // as the core bans it
  return generate_alone(*be, *m.tok, without_eos);
}

// Request i + 1 ended done with the tokens rs[i] gets alone, for every i, and no block is left in use.
void check_done_alone(const pair_outcome& o, const scheduler_core& core, const engine_model& m,
                      const std::vector<request>& rs) {
  for (size_t i = 0; i < rs.size(); ++i) {
    INFO("request " << i + 1);
    CHECK(o.terminal.at(i + 1).kind == event_kind::done);
    CHECK(o.tokens.at(i + 1) == alone(m, rs[i]));
  }
  CHECK(core.kv().stats().used == 0);
}

// Victims go in running order, the longest-running first: unlike fcfs (the latest arrival), it
// takes a request whose decode the step already holds when a later one needs a block.
class first_running final : public policy {
 public:
  std::string_view name() const override { return "first-running"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override {
    std::vector<uint32_t> order(s.waiting.size());
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  uint32_t pick_victim(const policy_snapshot&, std::span<const uint32_t> candidates) const override {
    return candidates.front();
  }
};

}  // namespace

TEST_CASE("a victim dropped from a decode step leaves its blocks to be copied in when it decodes again",
          "[scheduler_core][handoff]") {
  // Blocks of 4, a pool of 4 on each side. A (7 tokens: a full block, cached, and 3 in a second)
  // and B (8: two full blocks) fill it in one prefill step. In the decode step A's token goes in
  // first; B then needs a third block, and A, the policy's victim, leaves the step. Its full
  // block stays cached, never copied; once B is done A starts again on it and must ship it then.
  const auto m = engine_model::make();
  std::mt19937_64 rng(test::test_seed());
  const std::vector<request> rs = {greedy_request(random_prompt(7, 600, rng), 4),
                                   greedy_request(random_prompt(8, 600, rng), 3)};
  auto prefill_be = m->backend(16, 4), decode_be = m->backend(16, 4);
  scheduler_core core(pair_config(64, 4), *m->tok, 512, 4, 4, std::make_unique<first_running>());
  for (size_t i = 0; i < rs.size(); ++i) core.add(i + 1, rs[i], 0);
  const pair_outcome o = drive_pair(core, *prefill_be, *decode_be, rng);
  CHECK(core.gauges().preemptions == 1);
  check_done_alone(o, core, *m, rs);
}

TEST_CASE("a disaggregated pair by copy with a pool too small preempts, recomputes and changes no token",
          "[scheduler_core][handoff]") {
  // 32 blocks of 8 a side for 16 requests of 6-51 prompt tokens and 14 more each: they start
  // while their prompts fit and outgrow the pool as they decode: blocks a victim frees go to
  // another request's prefill, and every victim recomputes, its prefix maybe still cached. Now
  // and then (one seed in the first twenty) a victim is also the case above under the engine's
  // own policies: in its first decode step, already in the step when another needs a block.
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<request> rs;
  for (size_t i = 0; i < 16; ++i) {
    rs.push_back(greedy_request(random_prompt(6 + i * 3, 600, rng), 14));
    rs.back().tenant = i % 2 ? "voice" : "nightly";
  }
  struct variant {
    const char* policy;
    bool classes;
  };
  for (const variant v : {variant{"fcfs", false}, variant{"household", false}, variant{"household", true}}) {
    INFO("policy " << v.policy << (v.classes ? ", voice interactive and nightly background" : ""));
    auto prefill_be = m->backend(256, 8), decode_be = m->backend(256, 8);
    engine_config cfg = pair_config(64, 16);
    cfg.long_prefill_threshold = 32;
    if (v.classes)
      cfg.tenants = {{.name = "voice", .cls = tenant_class::interactive},
                     {.name = "nightly", .cls = tenant_class::background}};
    scheduler_core core(cfg, *m->tok, 512, 32, 8, make_policy(v.policy));
    for (size_t i = 0; i < rs.size(); ++i) core.add(i + 1, rs[i], 0);
    const pair_outcome o = drive_pair(core, *prefill_be, *decode_be, rng);
    CHECK(core.gauges().preemptions > 0);
    check_done_alone(o, core, *m, rs);
  }
}

TEST_CASE("a disaggregated pair by copy copies a cached prefix block in once for every request sharing it",
          "[scheduler_core][handoff]") {
  // A 64-token prefix (4 blocks of 16) under three prompts: r1 (+10, 5 blocks), r2 (+7, 5) once
  // r1 has drawn its first token (its prefix blocks cached, its decode maybe not yet planned),
  // r3 (+20, 6) once both are done (the blocks unreferenced, still cached). Shared blocks cross
  // once: 5 + 1 + 2 = 8 blocks, not 16.
  const auto m = engine_model::make();
  const uint64_t seed = test::test_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::vector<token_id> prefix = random_prompt(64, 600, rng);
  std::vector<request> rs;
  for (size_t tail : {10u, 7u, 20u})
    rs.push_back(greedy_request(with_random_tail(prefix, tail, 600, rng), 6));
  auto prefill_be = m->backend(2048), decode_be = m->backend(2048);
  scheduler_core core(pair_config(256, 8), *m->tok, 512, 128, 16, make_policy("household"));
  core.add(1, rs[0], 0);
  size_t added = 1;
  uint64_t copied_before_r3 = 0;
  const pair_outcome o =
      drive_pair(core, *prefill_be, *decode_be, rng, [&](uint64_t n, const pair_outcome& so_far) {
        const double now = 0.001 * static_cast<double>(n);
        if (added == 1 && so_far.tokens.contains(1)) {
          core.add(++added, rs[1], now);
        } else if (added == 2 && so_far.terminal.size() == 2) {
          copied_before_r3 = so_far.copied_blocks;
          core.add(++added, rs[2], now);
        }
      });
  CHECK(copied_before_r3 == 5 + 1);
  CHECK(o.copied_blocks - copied_before_r3 == 2);
  CHECK(core.kv().stats().hits == 8);  // r2's 4 prefix blocks, and r3's
  check_done_alone(o, core, *m, rs);
}
