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
//! - prefill_cap: the stream guard (stream_guard.hpp) for the request it serves first: while
//!   streams with an ITL target decode, the step's prefill fits within the tightest target
//!   (error kept in reserve), never beyond half the tightest TTFT target, a stream's earned long
//!   gap spent only on a prompt that would otherwise miss its TTFT; never below
//!   `min_prefill_tokens`, so prefill always progresses.
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
