#include "core/worker_choice.hpp"

#include <algorithm>

namespace hearth {

namespace {

struct token_costs {
  double prefill_ms = 1, decode_ms = 1;
};

token_costs costs_of(const step_time_model& m) {
  return {m.per_token_ms, m.per_token_ms + m.per_seq_ms};
}

}  // namespace

std::optional<size_t> choose_worker(std::span<const worker_load> workers, uint32_t prompt_tokens,
                                    uint32_t max_tokens) {
  const bool fitted = std::ranges::all_of(
      workers, [](const worker_load& w) { return !w.available || w.speed.per_token_ms > 0; });
  std::optional<size_t> best;
  double best_ms = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    const worker_load& w = workers[i];
    if (!w.available || !w.fits) continue;
    const token_costs c = fitted ? costs_of(w.speed) : token_costs{};
    const double prefill =
        static_cast<double>(w.held.prefill_tokens) + prompt_tokens - std::min(w.cached_tokens, prompt_tokens);
    const double decode = static_cast<double>(w.held.decode_tokens) + max_tokens;
    const double ms = prefill * c.prefill_ms + decode * c.decode_ms;
    if (!best || ms < best_ms || (ms == best_ms && w.held.sequences < workers[*best].held.sequences)) {
      best = i;
      best_ms = ms;
    }
  }
  return best;
}

}  // namespace hearth
