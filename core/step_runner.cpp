#include "core/step_runner.hpp"

#include <algorithm>
#include <chrono>
#include <span>
#include <string>

#include "kernels/parallel.hpp"

namespace hearth {

step_result step_runner::run(const step& s) {
  const auto t0 = std::chrono::steady_clock::now();
  step_result r{.number = s.number, .sampled = std::vector<token_id>(s.seqs.size(), no_token)};
  if (r.error = copy_in(s); !r.error.empty()) return r;
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
    if (auto smp = sampler::create(e.sampling, e.draw))
      r.sampled[i] = smp->sample(logits_.last(static_cast<uint32_t>(i)), e.recent);
  });
  r.compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// Handoff by copy: the decode worker pulls the blocks into its own pool, so they land in the
// memory of its NUMA node (the thread that writes a page places it) or its device, all of a
// step's blocks in one copy each way.
std::string step_runner::copy_in(const step& s) {
  copy_ids_.clear();
  for (const step_seq& e : s.seqs) copy_ids_.insert(copy_ids_.end(), e.copy_in.begin(), e.copy_in.end());
  if (copy_ids_.empty()) return {};
  kv_store& pool = be_->kv();
  if (!s.kv_blocks.empty()) {
    // Shipped from another node: written as they came (write_blocks checks their size).
    const auto in = std::as_bytes(std::span(s.kv_blocks));
    if (auto st = pool.write_blocks(copy_ids_, in); !st)
      return "step: shipped KV blocks: " + st.error().message;
    return {};
  }
  if (!copy_from_ || copy_from_->layout().block_bytes() != pool.layout().block_bytes()) {
    return "step: blocks to copy in, but no source pool of this layout";
  }
  copy_buffer_.resize(copy_ids_.size() * pool.layout().block_bytes());
  if (auto st = copy_from_->read_blocks(copy_ids_, copy_buffer_); !st) return "step: " + st.error().message;
  if (auto st = pool.write_blocks(copy_ids_, copy_buffer_); !st) return "step: " + st.error().message;
  return {};
}

}  // namespace hearth
