#pragma once
// What a worker does with a step: one backend iteration, then one draw for every sequence that
// ends its prompt or decodes. Sampling runs on the worker's cores, next to the logits, so only
// token ids travel back to the scheduler. Used by the worker actors, the tests and the bench.

#include "engine/step.hpp"
#include "kernels/backend.hpp"

namespace hearth {

class step_runner {
 public:
  explicit step_runner(backend& be) : be_(&be) {}

  //! Runs the step; a backend error (a bad batch) comes back in result.error, nothing computed.
  step_result run(const step& s);

 private:
  backend* be_;
  std::vector<batch_seq> batch_;
  batch_logits logits_;
};

}  // namespace hearth
