#pragma once
// The engine through its actors, for the tests: the `tiny` model, an engine started on it with
// one kernel thread, and a sink that collects each request's events and checks their order.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <mutex>

#include "actors/engine.hpp"
#include "actors/event_queue.hpp"
#include "engine_fixture.hpp"

namespace hearth::test {

//! `tiny` (dim 288, 6 layers, vocabulary 32000) with a context of n_ctx (512 or 2048), built once.
inline const engine_model& tiny(uint32_t n_ctx = 512) {
  static const auto m512 = engine_model::make(*find_preset("tiny"));
  if (n_ctx == 512) return *m512;
  REQUIRE(n_ctx == 2048);
  static const auto m2048 = engine_model::make(*find_preset("tiny"), 2048);
  return *m2048;
}

// One kernel thread: CTest runs two test binaries at once on this 2-core machine, and spinning
// OpenMP teams that share cores slow everything down (thread counts are covered by the backend tests).
inline std::unique_ptr<engine> start_engine(engine_config cfg, uint64_t kv_tokens = 8192, uint32_t block = 16,
                                            const engine_model& m = tiny(), engine_hooks hooks = {}) {
  if (cfg.threads_per_worker == 0) cfg.threads_per_worker = 1;
  auto e = engine::start(
      cfg, m.tok,
      [&m, kv_tokens, block]() -> result<std::unique_ptr<backend>> {
        return std::unique_ptr<backend>(m.backend(kv_tokens, block));
      },
      std::move(hooks));
  if (!e) FAIL(e.error().message);
  return std::move(*e);
}

//! Each request's part of every step an engine ran, as its step_end hook reports them (on an
//! actor thread, before the step's events go out: complete once a request's end has arrived).
class step_log {
 public:
  engine_hooks hooks() {
    engine_hooks h;
    h.step_end = [this](const step& s, double) {
      const std::lock_guard lock(mu_);
      for (const step_seq& q : s.seqs) calls_[q.id].push_back(q);
    };
    return h;
  }
  std::vector<step_seq> of(request_id id) {
    const std::lock_guard lock(mu_);
    return calls_[id];
  }

 private:
  std::mutex mu_;
  std::map<request_id, std::vector<step_seq>> calls_;
};

struct outcome {
  std::map<request_id, std::vector<token_id>> tokens;
  std::map<request_id, request_event> terminal;
  std::map<request_id, int> accepted;

  std::vector<token_id> tokens_of(request_id id) const {
    const auto it = tokens.find(id);
    return it == tokens.end() ? std::vector<token_id>{} : it->second;
  }
};

//! Records one event in `o`, checking the order of its stream.
inline void record(request_event& e, outcome& o) {
  CHECK(o.terminal.count(e.id) == 0);  // nothing after the terminal event
  if (e.kind == event_kind::accepted) {
    CHECK(++o.accepted[e.id] == 1);
  } else if (e.kind == event_kind::token) {
    CHECK(o.accepted[e.id] == 1);
    CHECK(e.index == o.tokens[e.id].size());
    o.tokens[e.id].push_back(e.token);
  } else {
    o.terminal[e.id] = e;
  }
}

//! Takes events from `events` until n requests have ended.
inline void collect(event_queue& events, size_t n, outcome& o) {
  while (o.terminal.size() < n) {
    auto e = events.next(std::chrono::seconds(120));
    REQUIRE(e);
    record(*e, o);
  }
}

//! Submits every request of rs to e on `events`, then records events until each has ended:
//! their ids, in rs's order.
inline std::vector<request_id> run_to_end(engine& e, event_queue& events, const std::vector<request>& rs,
                                          outcome& o) {
  std::vector<request_id> ids;
  for (const auto& r : rs) ids.push_back(e.submit(r, events.sink()));
  collect(events, rs.size(), o);
  return ids;
}

//! Every request ids[i] ended done, with the tokens expected[i].
inline void check_done_with(const outcome& o, const std::vector<request_id>& ids,
                            const std::vector<std::vector<token_id>>& expected) {
  for (size_t i = 0; i < ids.size(); ++i) {
    INFO("request " << i);
    CHECK(o.terminal.at(ids[i]).kind == event_kind::done);
    CHECK(o.tokens_of(ids[i]) == expected[i]);
  }
}

inline request greedy(std::vector<token_id> prompt, uint32_t max_tokens, std::string tenant = "t") {
  request r;
  r.tenant = std::move(tenant);
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  return r;
}

}  // namespace hearth::test
