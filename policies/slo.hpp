#pragma once
#include "policies/policy.hpp"

namespace hearth {

//! slo: earliest TTFT deadline first, and decode protection.
//! - Order: by deadline = arrival + the tenant's ttft_ms (a missed deadline stays first);
//!   requests of tenants without a TTFT target follow, in arrival order.
//! - Victim: the running request whose tenant has the loosest ITL target (none is loosest),
//!   latest arrival first.
//! - prefill_cap: while streams with an ITL target decode, the next step's prefill tokens are
//!   capped so the predicted step time, step_time.predict_ms(decodes + prefill, running + 1),
//!   stays within the tightest ITL target among them. A target is a quantile (itl_quantile of
//!   a stream's gaps must keep it), and a stream whose short gaps so far leave room for one more
//!   long one (misses + 1 <= (1 - quantile) * (gaps + 1)) does not hold the step back: when no
//!   stream does, the step takes its full budget, and a long prompt gets a chunk at full speed.
//!   The cap never goes below `min_prefill_tokens`, so prefill always progresses even when the
//!   decodes alone already exceed the target.
class slo_policy final : public policy {
 public:
  //! 32 tokens: two 16-position KV blocks, a chunk small enough to cost little next to the
  //! decodes yet enough that a long prompt still finishes.
  static constexpr uint32_t default_min_prefill_tokens = 32;

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
