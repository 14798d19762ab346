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
  //! Told each shape measured again (fit_remeasuring): its point, its first time and the new one.
  std::function<void(const profile_point& shape, double first_ms, double again_ms)> measured_again = {};
};

//! The KV positions the grid needs at once: the backend's pool must hold them.
uint64_t profile_positions();

//! Fits p to `points` (fit()), then measures again each point more than 25 % slower than the
//! fit predicts, keeping the faster of its times, and fits again; up to `retries` rounds. A stall
//! of the VM inflates a whole shape's median (Zen 5: a batch-1 step's 14.1 ms where its
//! neighbours took 5), and one such point moved every decode's prediction by ~10 %. A stall only
//! slows a step, so a point faster than the fit is left as measured. measure(i) times point i
//! afresh (infinity if it cannot).
status<> fit_remeasuring(step_profile& p, std::vector<profile_point> points,
                         const std::function<double(size_t)>& measure, unsigned retries = 2);

//! Measures and fits (fit_remeasuring); the identity fields (cpu, model, compute, threads) and overhead_ms
//! are the caller's to set. errc::invalid_argument for a pool too small or a context too short.
result<step_profile> measure_profile(backend& be, token_id filler, const profile_options& opt);

}  // namespace hearth::sim
