#pragma once
// Where a new request goes when the engine has several workers (data parallel): to the worker
// that would finish all it holds plus this request first, as that worker's own step-time fit
// predicts, counting the prompt tokens its prefix cache would serve (so a tenant's requests that
// share a system prompt or a document stay where it is cached, while it is not much busier).
// A prefill token costs per_token_ms; a decode token, one sequence in one step, per_token_ms +
// per_seq_ms. The steps' base cost is left out: it is paid whoever holds the work. Until every
// worker has a fit (no step yet), every token costs the same everywhere.

#include <cstdint>
#include <optional>
#include <span>

#include "core/scheduler_core.hpp"

namespace hearth {

//! One worker as placement sees it.
struct worker_load {
  bool available = true;  //!< joined and not lost
  bool fits = true;       //!< its pool can hold the request
  scheduler_core::outstanding held = {};
  uint32_t cached_tokens = 0;  //!< of this request's prompt, in its prefix cache
  step_time_model speed = {};  //!< its fit; all zero before its first step
};

//! The index of the worker for a request of `prompt_tokens` that may draw `max_tokens`, ties to
//! the one holding fewer sequences, then the first; nullopt when none is available and fits.
std::optional<size_t> choose_worker(std::span<const worker_load> workers, uint32_t prompt_tokens,
                                    uint32_t max_tokens);

}  // namespace hearth
