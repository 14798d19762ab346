#pragma once
// The engine the gateway and fault tests run: a model of engine_fixture.hpp behind a
// scripted_backend.
#include "actors/engine.hpp"
#include "engine_fixture.hpp"
#include "scripted_backend.hpp"

namespace hearth::test {

//! An engine on `m` (a KV pool of `kv_tokens` positions) whose backend follows `script`, with
//! one kernel thread.
inline std::unique_ptr<engine> scripted_engine(const engine_model& m, uint64_t kv_tokens, engine_config cfg,
                                               backend_script script, engine_hooks hooks = {}) {
  cfg.threads_per_worker = 1;
  auto e = engine::start(
      cfg, m.tok,
      [&m, kv_tokens, script]() -> result<std::unique_ptr<backend>> {
        return std::unique_ptr<backend>(std::make_unique<scripted_backend>(m.backend(kv_tokens), script));
      },
      std::move(hooks));
  if (!e) FAIL(e.error().message);
  return std::move(*e);
}

}  // namespace hearth::test
