#pragma once
// The household bench on a virtual clock. The engine's own decisions run unchanged (admission's
// admission_core, the scheduler's scheduler_core with its policy and KV block manager, and
// step_lanes, the loop the scheduler actor drives) over a simulated backend whose steps take
// what a step_profile predicts, in a discrete-event loop. No actor and no model runs: tokens
// come from a fixed stream. The result is the real bench's (bench/household/runner.hpp), so its
// reports, JSON, CSV and plots compare side by side; the same schedule gives the same result.

#include <functional>
#include <optional>
#include <vector>

#include "bench/household/runner.hpp"
#include "core/config.hpp"
#include "model/tokenizer.hpp"
#include "sim/step_profile.hpp"

namespace hearth::sim {

//! The engine being simulated: its configuration (mode, policy, limits, tenants) and the
//! model's and pool's shape, as a real engine of that model would have them.
struct sim_engine {
  engine_config cfg;
  const tokenizer* tok = nullptr;
  uint32_t n_ctx = 0, n_vocab = 0;
  uint32_t n_blocks = 0, block_size = 16;
  step_profile profile;                        //!< every step (disaggregated: the prefill lane's)
  std::optional<step_profile> decode_profile;  //!< disaggregated: the decode lane's (else `profile`)
  uint64_t seed = 1;                           //!< the steps' noise (step_profile::noise)
  //! Told each step as it starts (virtual seconds): what a test compares with a real engine's.
  std::function<void(double t_s, const step& s)> on_step = {};
};

//! Runs `requests` (by arrival time; index == position; cls: each one's class) through the
//! simulated engine; after the last arrival, requests get `drain_s` of virtual time to end.
household::run_result simulate(const sim_engine& e, const std::vector<household::bench_request>& requests,
                               const std::vector<uint32_t>& cls, double drain_s);

}  // namespace hearth::sim
