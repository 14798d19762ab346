#pragma once
// Stream protection, shared by the policies that keep interactive streams within their targets
// (slo, household; internal to policies/): the cap on a step's prefill that keeps the decoding
// streams' inter-token gaps within their ITL targets, and the TTFT deadlines it weighs.

#include <cstdint>
#include <limits>
#include <optional>

#include "policies/ordering.hpp"

namespace hearth::policy_detail {

inline constexpr double no_target = std::numeric_limits<double>::infinity();

//! r's TTFT deadline on the engine clock (arrival + its tenant's ttft_ms), or no_target.
double deadline_of(const policy_snapshot& s, const request_view& r);
//! Whether r can still get its first token by deadline_s: its remaining prefill, at full speed
//! from now (the step-time model), ends before it.
bool can_make(const policy_snapshot& s, const request_view& r, double deadline_s);

//! The prefill tokens of the next step, while streams with an ITL target decode: the predicted
//! step time (step_time.predict_ms(decodes + prefill, running + 1, their attention)) stays within
//! the tightest ITL target among them, the model's recent error kept in reserve (the step is
//! planned to target / (1 + 2 * its relative RMS error)). `first` is the request served first:
//! the chunk's attention is counted at its position. With TTFT targets, no step is planned beyond
//! half the tightest, so a request arriving mid-step can still make its own. A stream whose short
//! gaps leave room for one more long one (misses + 1 <= (1 - quantile) * gaps) does not hold the
//! step back when `first` would miss its TTFT in held steps and make it at full speed. Never
//! below min_prefill_tokens, so prefill always progresses; nullopt when nothing needs a cap (no
//! target, or no measured step cost yet).
std::optional<uint32_t> stream_guard_cap(const policy_snapshot& s, const request_view* first,
                                         uint32_t min_prefill_tokens);

}  // namespace hearth::policy_detail
