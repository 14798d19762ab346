#pragma once
// Measures a step_profile on the real backend: steps over a grid of shapes (decodes of 1 to 64
// sequences at short and long contexts, prompt chunks of 8 to 512 tokens at the start and deep
// in a prompt, and mixes of both), each run through the step runner as a worker runs it
// (forward and sampling), its median time kept; then fits the profile's model to them.

#include <functional>
#include <string>

#include "common/result.hpp"
#include "kernels/backend.hpp"
#include "sim/step_profile.hpp"

namespace hearth::sim {

struct profile_options {
  unsigned repeats = 5;  //!< runs per shape; the median is kept, their spread is the noise
  //! Told each shape measured and their number.
  std::function<void(size_t done, size_t total)> progress = {};
};

//! The KV positions the grid needs at once: the backend's pool must hold them.
uint64_t profile_positions();

//! Measures and fits; the identity fields (cpu, model, compute, threads) and overhead_ms are
//! the caller's to set. errc::invalid_argument for a pool too small or a context too short.
result<step_profile> measure_profile(backend& be, token_id filler, const profile_options& opt);

}  // namespace hearth::sim
