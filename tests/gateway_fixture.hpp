#pragma once
// An engine on the micro model behind a gateway on a loopback port, for the wire tests, on a
// scripted backend (scripted_backend.hpp: a delay per step, a fault); the oracle (one request
// alone, as `hearth generate` runs it).
#include <catch2/catch.hpp>

#include <thread>

#include "actors/engine.hpp"
#include "clients/cpp/client.hpp"
#include "engine_fixture.hpp"
#include "model/chat_prompt.hpp"
#include "scripted_engine.hpp"
#include "server/gateway.hpp"

namespace hearth::test {

inline const engine_model& micro() {
  static const auto m = engine_model::make();
  return *m;
}

//! Waits up to 10 s for `eng` to hold no KV block and run or queue nothing.
inline bool engine_idle(engine& eng) {
  for (int i = 0; i < 1000; ++i) {
    const auto g = *eng.gauges();
    if (g.kv.used == 0 && g.running == 0 && g.waiting == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

struct served {
  std::unique_ptr<engine> eng;
  std::unique_ptr<server::gateway> gw;

  //! step_delay 0: full speed.
  static served start(server::gateway_options opt = {}, engine_config cfg = {},
                      std::chrono::milliseconds step_delay = std::chrono::milliseconds(0)) {
    return start(std::move(opt), std::move(cfg), backend_script{.delay = step_delay});
  }

  static served start(server::gateway_options opt, engine_config cfg, backend_script script) {
    const engine_model& m = micro();
    auto e = scripted_engine(m, 4096, std::move(cfg), std::move(script));
    if (opt.endpoint == server::gateway_options{}.endpoint) opt.endpoint = "tcp://127.0.0.1:*";
    if (opt.heartbeat_ms == server::gateway_options{}.heartbeat_ms) opt.heartbeat_ms = 100;
    opt.model.n_vocab = static_cast<uint32_t>(m.tok->n_vocab());
    auto g = server::gateway::start(*e, opt);
    if (!g) FAIL(g.error().message);
    return {std::move(e), std::move(*g)};
  }

  ~served() {
    if (gw) gw->stop(std::chrono::milliseconds(0));
  }

  client::options options(std::string tenant = "t") const {
    return {.endpoint = gw->endpoint(),
            .tenant = std::move(tenant),
            .connect_timeout = std::chrono::milliseconds(5000)};
  }

  //! Waits up to 10 s for the engine to hold no KV block and run or queue nothing.
  bool idle() const { return engine_idle(*eng); }
};

//! The greedy completion of `prompt_tokens` alone (the end-of-generation token excluded).
inline std::vector<int32_t> oracle(const std::vector<token_id>& prompt_tokens, uint32_t max_tokens) {
  const engine_model& m = micro();
  auto be = m.backend(1024);
  request r;
  r.prompt = prompt_tokens;
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0;
  const auto out = generate_alone(*be, *m.tok, r);
  return {out.begin(), out.end()};
}

inline std::vector<token_id> raw_prompt(const std::string& text) {
  return micro().tok->encode(text, {.add_bos = true, .parse_special = false});
}

//! A prompt whose greedy completion runs 300 tokens (no early end of generation): streams of
//! up to 300 tokens from it last as long as asked.
inline const std::string& long_prompt() {
  static const std::string found = [] {
    const engine_model& m = micro();
    auto be = m.backend(1024);
    for (int i = 0; i < 200; ++i) {
      const std::string p = "the kitchen light number " + std::to_string(i);
      request r;
      r.prompt = raw_prompt(p);
      r.max_tokens = 300;
      r.sampling.temperature = 0;
      if (generate_alone(*be, *m.tok, r).size() == r.max_tokens) return p;
    }
    FAIL("no prompt of the micro model generates 300 tokens");
    return std::string();
  }();
  return found;
}

}  // namespace hearth::test
