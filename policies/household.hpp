#pragma once
#include "policies/policy.hpp"
#include "policies/vtc.hpp"

namespace hearth {

//! household (the default): class priority, VTC fair share within a class, a guaranteed share
//! for lower classes, and the streams' ITL targets kept.
//! - Order: by class (interactive, standard, background), within a class by VTC counter (as
//!   vtc, projected over the step), FCFS within a tenant. But a tenant whose counter has fallen
//!   more than `lag` weighted tokens behind every backlogged tenant of a higher class is served
//!   first. Under sustained overload a lower class therefore gets at least its weighted share,
//!   weight / (sum of the backlogged tenants' weights), while a burst of higher-class work may
//!   run up to `lag` tokens ahead before it has to share. So a background tenant of weight 1
//!   next to an interactive one of weight 3 always gets at least a quarter when both are busy.
//! - Victim: lowest class, then the most service, then the latest arrival.
//! - prefill_cap: slo's stream guard (stream_guard.hpp), for the request this order serves first:
//!   a step's prefill is cut so the decoding streams keep their ITL targets (without it, a
//!   document's 256-token chunks gave the household bench's chats a median p95 gap of 328 ms
//!   against a 100 ms target).
class household_policy final : public policy {
 public:
  //! 4096 weighted tokens: about two long document prompts, or ten voice turns, of head start
  //! for a higher class before a waiting lower class must be served.
  static constexpr double default_lag = 4096;

  //! As slo's: one 16-position KV block at least, so a long prompt still finishes.
  static constexpr uint32_t default_min_prefill_tokens = 16;

  explicit household_policy(double lag = default_lag, vtc_cost cost = {},
                            uint32_t min_prefill_tokens = default_min_prefill_tokens)
      : lag_(lag), cost_(cost), min_prefill_tokens_(min_prefill_tokens) {}
  std::string_view name() const override { return "household"; }
  std::vector<uint32_t> order_waiting(const policy_snapshot& s) const override;
  uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const override;
  std::optional<uint32_t> prefill_cap(const policy_snapshot& s) const override;

 private:
  double lag_;
  vtc_cost cost_;
  uint32_t min_prefill_tokens_;
};

}  // namespace hearth
