#include "engine/step_runner.hpp"

#include <chrono>

#include "kernels/parallel.hpp"

namespace hearth {

step_result step_runner::run(const step& s) {
  const auto t0 = std::chrono::steady_clock::now();
  step_result r{.number = s.number, .sampled = std::vector<token_id>(s.seqs.size(), no_token)};
  batch_.clear();
  for (const step_seq& e : s.seqs) batch_.push_back({e.tokens, e.start_pos, e.blocks, false});
  if (auto st = be_->forward(batch_, logits_); !st) {
    r.error = st.error().message;
    return r;
  }
  parallel_for(s.seqs.size(), [&](size_t i) {
    const step_seq& e = s.seqs[i];
    if (!e.sample) return;
    // Parameters were checked at admission; a sampler that fails to build draws nothing, which
    // the scheduler turns into an error for that request alone.
    if (auto smp = sampler::create(e.sampling, e.draw)) r.sampled[i] = smp->sample(logits_.last(static_cast<uint32_t>(i)), e.recent);
  });
  r.compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace hearth
