#pragma once
// The scheduling policy seam. A policy sees a read-only snapshot of the engine (waiting and
// running requests, their tenants with SLOs and service counters, the clock, the measured
// step-time model) and decides: the order in which requests get prefill budget, which
// running request gives up its KV blocks when the pool runs dry, and optionally a cap on the
// prefill tokens of the next step. It keeps no state between calls and does no I/O, so it is
// unit-testable in microseconds and can be switched between two steps. State that fairness
// needs across steps (VTC's service counters) is the engine's, passed in the snapshot.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/request_id.hpp"

namespace hearth {

//! Household service classes, most latency-sensitive first.
enum class tenant_class : uint8_t { interactive, standard, background };

//! One tenant as a policy sees it.
struct tenant_view {
  std::string_view name = {};
  tenant_class cls = tenant_class::standard;
  double weight = 1.0;  //!< share relative to other tenants (> 0)
  double ttft_ms = 0;   //!< SLO targets; 0 = none
  double itl_ms = 0;
  double itl_quantile = 1;  //!< share of a stream's gaps that must keep itl_ms (configured: 0.9)
  double service = 0;       //!< VTC virtual counter: weighted tokens served / weight
};

//! The measured cost of a step: base + tokens * per_token + seqs * per_seq + kpairs * per_kpair,
//! where kpairs counts thousands of (query, key) pairs its attention scores (step::attention_kpairs).
struct step_time_model {
  double base_ms = 0;
  double per_token_ms = 0;
  double per_seq_ms = 0;
  double per_kpair_ms = 0;
  //! Root mean square of its recent prediction errors relative to the prediction: contention on
  //! the cores slows a long step by as large a share as a short one.
  double error_ratio = 0;
  double predict_ms(double tokens, double seqs, double kpairs = 0) const {
    return base_ms + tokens * per_token_ms + seqs * per_seq_ms + kpairs * per_kpair_ms;
  }
};

//! One request as a policy sees it.
struct request_view {
  request_id id = 0;
  std::string_view tenant = {};
  uint32_t tenant_index = 0;  //!< into policy_snapshot::tenants (when it is not empty)
  double arrival_s = 0;       //!< engine clock, seconds
  uint32_t prompt_tokens = 0;
  uint32_t computed_tokens = 0;  //!< positions whose keys and values are cached
  uint32_t generated_tokens = 0;
  uint32_t blocks = 0;  //!< KV blocks held
  uint32_t preemptions = 0;
  uint32_t itl_gaps = 0;    //!< gaps between its tokens so far
  uint32_t itl_misses = 0;  //!< of which longer than its tenant's itl_ms
};

struct policy_snapshot {
  //! Every request with prompt left to compute: not yet started, preempted, or running and
  //! mid-prefill (computed_tokens > 0; those are also in `running`).
  std::span<const request_view> waiting;
  std::span<const request_view> running;  //!< holding KV blocks
  double now_s = 0;
  std::span<const tenant_view> tenants = {};  //!< empty: the engine runs without tenant configuration
  step_time_model step_time = {};
  uint32_t max_batched_tokens = 0;  //!< the step's token budget
};

class policy {
 public:
  virtual ~policy() = default;
  virtual std::string_view name() const = 0;
  //! Indices into s.waiting, most deserving first; every index exactly once.
  virtual std::vector<uint32_t> order_waiting(const policy_snapshot& s) const = 0;
  //! The request to preempt among s.running[candidates]: an element of `candidates` (never
  //! empty), chosen least deserving first.
  virtual uint32_t pick_victim(const policy_snapshot& s, std::span<const uint32_t> candidates) const = 0;
  //! Prefill tokens the next step may carry at most (decode protection); nothing = no cap.
  virtual std::optional<uint32_t> prefill_cap(const policy_snapshot& s) const {
    (void)s;
    return std::nullopt;
  }
};

//! The policy called `name`, or nothing for an unknown name.
std::unique_ptr<policy> make_policy(std::string_view name);
//! The names make_policy knows.
std::vector<std::string> policy_names();
//! "unknown policy 'NAME' (the policies: fcfs, ...)": what to tell whoever named it.
std::string unknown_policy_message(std::string_view name);

}  // namespace hearth
