// Supervision: a backend step that throws, or never returns, fails the engine for good. Every
// request it holds ends with `internal` at once, later ones are refused with it, the failure
// listeners hear of it exactly once, and the gauges say so instead of reading zero.
#include <catch2/catch.hpp>

#include <mutex>

#include "engine_harness.hpp"
#include "scripted_engine.hpp"

using namespace hearth;
using namespace hearth::test;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<engine> start_scripted(engine_config cfg, backend_script script, engine_hooks hooks = {}) {
  return scripted_engine(tiny(), 8192, std::move(cfg), std::move(script), std::move(hooks));
}

// What a failure listener was told. Shared with the listener, which the engine keeps.
class told {
 public:
  void listen(engine& e) {
    e.on_failure([s = s_](const std::string& why) {
      std::lock_guard lock(s->m);
      s->whys.push_back(why);
    });
  }
  std::vector<std::string> get() const {
    std::lock_guard lock(s_->m);
    return s_->whys;
  }

 private:
  struct state {
    std::mutex m;
    std::vector<std::string> whys;
  };
  std::shared_ptr<state> s_ = std::make_shared<state>();
};

// The listeners are told by the supervisor, which may hear of the stopped actor just after the
// requests have ended.
std::vector<std::string> told_within(const told& t, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (t.get().empty() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  return t.get();
}

// Receives until n requests have ended; fails if that takes longer than `within`.
void collect_within(event_queue& self, size_t n, outcome& o, std::chrono::milliseconds within) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (o.terminal.size() < n) {
    if (auto e = self.next(10ms)) record(*e, o);
    REQUIRE(std::chrono::steady_clock::now() <= deadline);
  }
}

void check_all_internal(const outcome& o) {
  for (const auto& [id, e] : o.terminal) {
    INFO("request " << id << ": " << e.message);
    CHECK(e.kind == event_kind::error);
    CHECK(e.reason == reject_reason::internal);
  }
}

void check_refused_later(engine& e, event_queue& self) {
  const request_id late = e.submit(greedy(std::vector<token_id>(8, 5), 4), self.sink());
  outcome o;
  collect_within(self, 1, o, 2s);
  CHECK(o.terminal.at(late).kind == event_kind::rejected);
  CHECK(o.terminal.at(late).reason == reject_reason::internal);
  CHECK_FALSE(e.gauges().ok());  // not zeros: the scheduler is gone
}

// Submits n requests, which must all end with `internal` within 5 s; returns what the failure
// listener was told (once).
std::string fail_requests(engine& e, event_queue& self, size_t n, outcome& o) {
  told listeners;
  listeners.listen(e);
  for (size_t i = 0; i < n; ++i)
    e.submit(greedy(std::vector<token_id>(16, static_cast<token_id>(7 + i)), 100), self.sink());
  collect_within(self, n, o, 5s);
  check_all_internal(o);
  const auto whys = told_within(listeners, 2s);
  REQUIRE(whys.size() == 1);
  return whys[0];
}

}  // namespace

TEST_CASE("a backend step that throws fails the engine: every request ends with internal at once",
          "[engine][faults]") {
  auto e = start_scripted({}, {.fault_at = 3});
  event_queue self(*e);
  outcome o;
  const std::string why = fail_requests(*e, self, 6, o);
  CHECK_THAT(why, Catch::Matchers::Contains("worker stopped") && Catch::Matchers::Contains("step 3 fails"));
  CHECK(e->failure() == why);
  check_refused_later(*e, self);
  // A listener that comes late hears at once.
  told late;
  late.listen(*e);
  CHECK(late.get() == std::vector<std::string>{why});
}

TEST_CASE("a backend step that never returns fails the engine after step_timeout_ms", "[engine][faults]") {
  auto hang = std::make_shared<gate>();
  auto e = start_scripted({.step_timeout_ms = 300}, {.fault_at = 3, .hang = hang});
  const open_at_exit opener{hang};
  event_queue self(*e);
  outcome o;
  const std::string why = fail_requests(*e, self, 4, o);
  for (const auto& [id, ev] : o.terminal)
    CHECK_THAT(ev.message, Catch::Matchers::Contains("has not returned"));
  CHECK_THAT(why, Catch::Matchers::Contains("has not returned in 300 ms"));
  check_refused_later(*e, self);
}

TEST_CASE("a step that takes long but returns is no failure", "[engine][faults]") {
  auto e = start_scripted({.step_timeout_ms = 400}, {.delay = 100ms});
  event_queue self(*e);
  const request_id id = e->submit(greedy(std::vector<token_id>(8, 11), 8), self.sink());
  outcome o;
  collect_within(self, 1, o, 20s);
  CHECK(o.terminal.at(id).kind == event_kind::done);
  CHECK_FALSE(e->failure());
}

// What systemd's watchdog hears (hearth serve pings it from here): pings while the engine idles
// and works, none once a step hangs past step_timeout_ms.
TEST_CASE("keep-alive pings come from the engine's loop and stop when a step hangs", "[engine][faults]") {
  auto pings = std::make_shared<std::atomic<int>>(0);
  auto hang = std::make_shared<gate>();
  auto e = start_scripted(
      {.step_timeout_ms = 300}, {.fault_at = 3, .hang = hang},
      {.alive = {.every = 20ms, .ping = [pings] { ++*pings; }}, .request_end = {}, .step_end = {}});
  const open_at_exit opener{hang};
  std::this_thread::sleep_for(200ms);
  CHECK(pings->load() >= 3);  // idle: ~10 intervals; a loaded machine may delay some
  event_queue self(*e);
  outcome o;
  fail_requests(*e, self, 2, o);  // step 3 hangs, then the engine fails
  const int at_failure = pings->load();
  std::this_thread::sleep_for(200ms);
  CHECK(pings->load() == at_failure);
}

// What hearth serve's log lines come from: every request's record as it ends, refusals included.
TEST_CASE("the request_end hook hears every request end, refusals too", "[engine]") {
  struct heard {
    std::mutex m;
    std::vector<request_record> records;
  };
  auto h = std::make_shared<heard>();
  auto e = start_scripted({}, {},
                          {.alive = {},
                           .request_end =
                               [h](const request_record& r) {
                                 std::lock_guard lock(h->m);
                                 h->records.push_back(r);
                               },
                           .step_end = {}});
  event_queue self(*e);
  const request_id a = e->submit(greedy(std::vector<token_id>(8, 11), 5), self.sink());
  const request_id b = e->submit(greedy(std::vector<token_id>(4, 12), 3), self.sink());
  const request_id too_long = e->submit(greedy(std::vector<token_id>(100000, 13), 3), self.sink());
  outcome o;
  collect_within(self, 3, o, 20s);
  CHECK(o.terminal.at(too_long).kind == event_kind::rejected);
  const auto deadline = std::chrono::steady_clock::now() + 2s;  // metrics may hear just after the sink
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(h->m);
      if (h->records.size() >= 3) break;
    }
    std::this_thread::sleep_for(5ms);
  }
  std::lock_guard lock(h->m);
  REQUIRE(h->records.size() == 3);
  for (const auto& r : h->records) {
    if (r.kind == event_kind::rejected) {
      CHECK(r.reason == reject_reason::too_long);
      continue;
    }
    CHECK(r.kind == event_kind::done);
    CHECK(((r.id == a && r.use.completion_tokens == 5) || (r.id == b && r.use.completion_tokens == 3)));
  }
}

TEST_CASE("the step_end hook hears every step that ran, with its shape, before its events", "[engine]") {
  struct heard {
    std::mutex m;
    uint32_t steps = 0, tokens = 0, decodes = 0;
    bool timed = true;
  };
  auto h = std::make_shared<heard>();
  auto e = start_scripted(
      {}, {}, {.alive = {}, .request_end = {}, .step_end = [h](const step& s, double round_trip_ms) {
                 std::lock_guard lock(h->m);
                 ++h->steps;
                 h->tokens += s.n_tokens();
                 h->decodes += s.n_tokens_decode();
                 h->timed = h->timed && round_trip_ms >= 0;
               }});
  event_queue self(*e);
  e->submit(greedy(std::vector<token_id>(8, 11), 5), self.sink());
  e->submit(greedy(std::vector<token_id>(4, 12), 3), self.sink());
  outcome o;
  collect_within(self, 2, o, 20s);
  std::lock_guard lock(h->m);
  // Each prompt once, then a decode for every token after the first; heard before the done.
  CHECK(h->tokens == 8 + 4 + 4 + 2);
  CHECK(h->decodes == 4 + 2);
  CHECK(h->steps >= 5);
  CHECK(h->timed);
}
