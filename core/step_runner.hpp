#pragma once
// What a worker does with a step: one backend iteration, then one draw for every sequence that
// ends its prompt or decodes. Sampling runs on the worker's cores, next to the logits, so only
// token ids travel back to the scheduler. Used by the worker actors, the tests and the bench.

#include "core/step.hpp"
#include "kernels/backend.hpp"

namespace hearth {

class step_runner {
 public:
  //! copy_from: the prefill worker's pool, for a decode worker with KV handoff by copy (same
  //! layout and block count as be's pool); steps' copy_in blocks come from it, unless the step
  //! carries their bytes (kv_blocks: the prefill side runs on another node).
  explicit step_runner(backend& be, const kv_store* copy_from = nullptr) : be_(&be), copy_from_(copy_from) {}

  //! Runs the step; a backend error (a bad batch) comes back in result.error, nothing computed.
  step_result run(const step& s);

 private:
  std::string copy_in(const step& s);

  backend* be_;
  const kv_store* copy_from_;
  std::vector<uint32_t> copy_ids_;
  std::vector<std::byte> copy_buffer_;
  std::vector<batch_seq> batch_;
  batch_logits logits_;
};

}  // namespace hearth
