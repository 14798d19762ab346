#pragma once
#include "policies/policy.hpp"

namespace hearth {

//! slo: earliest TTFT deadline first, and decode protection.
//! - Order: by deadline = arrival + the tenant's ttft_ms, those that can still make it first: a
//!   request past its deadline, or whose remaining prefill at full speed (the step-time model)
//!   would end past it, has lost its SLO, and serving it before one that can still meet its own
//!   loses both (EDF's domino effect under overload). Those follow, earliest deadline first,
//!   then requests of tenants without a TTFT target, in arrival order.
//! - Victim: the running request whose tenant has the loosest ITL target (none is loosest),
//!   latest arrival first.
//! - prefill_cap: while streams with an ITL target decode, the next step's prefill tokens are
//!   capped so the predicted step time, step_time.predict_ms(decodes + prefill, running + 1,
//!   their attention), stays within the tightest ITL target among them; the attention of the
//!   chunk is counted at the position of the request served first. The model's recent error
//!   is kept in reserve: the step is planned to target / (1 + 2 * its relative RMS error). With tenants
//!   that have a TTFT target, no step is planned beyond half the tightest, so that a request arriving
//!   mid-step can still make its own. A target is a quantile (itl_quantile of a stream's gaps must keep it),
//!   and a stream whose short gaps so far leave room for one more long one (misses + 1 <= (1 - quantile) *
//!   gaps) does not hold the step back when the request served first would miss its TTFT in held steps and
//!   make it at full speed: when no stream holds it then, the step takes its full budget, and a long prompt
//!   gets a chunk at full speed. The cap never goes below `min_prefill_tokens`, so prefill always progresses
//!   even when the decodes alone already exceed the target.
class slo_policy final : public policy {
 public:
  //! 16 tokens: one 16-position KV block, enough that a long prompt still finishes. (32 held
  //! steps above a 150 ms target on `small` at position 2000 of a document, decodes beside.)
  static constexpr uint32_t default_min_prefill_tokens = 16;

  explicit slo_policy(uint32_t min_prefill_tokens = default_min_prefill_tokens)
      : min_prefill_tokens_(min_prefill_tokens) {}
  std::string_view name() const override { return "slo"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override;
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const override;
  std::optional<uint32_t> prefill_cap(const policy_snapshot& s) const override;

 private:
  uint32_t min_prefill_tokens_;
};

}  // namespace hearth
