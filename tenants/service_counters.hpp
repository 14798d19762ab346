#pragma once
// The Virtual Token Counter state of "Fairness in Serving Large Language Models" (Sheng et al.,
// OSDI '24): one counter per tenant, the weighted service it has received, normalised by its
// weight. The scheduler owns one, reports every change of the waiting queue and every token it
// computes, and copies counters() into policy_snapshot::tenants[i].service; the policies
// (vtc, household) serve the tenant with the lowest counter first. Pure: no clock, no I/O.
//
// The counter lift (the paper's algorithm): when a tenant becomes backlogged (a request of its
// joins the waiting queue while it had none waiting), its counter is raised to the lowest
// counter among the other backlogged tenants; when no other tenant is backlogged, to the counter
// of the tenant that last stopped being backlogged. A counter never decreases. Without the lift,
// a tenant that was idle would return with a low counter and monopolise the server until it
// "caught up" on service it never asked for.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "policies/vtc.hpp"

namespace hearth {

class service_counters {
 public:
  //! One tenant per weight (each > 0), indexed like policy_snapshot::tenants; counters start at 0.
  explicit service_counters(std::vector<double> weights, vtc_cost cost = {});

  //! A new request of tenant t joined the waiting queue (lifts t if it was not backlogged).
  void enqueue(uint32_t t);
  //! A preempted request of tenant t is back in the waiting queue: counted waiting, not lifted.
  //! The paper lifts on a new request's arrival only; a preempted one is service interrupted,
  //! not new demand, and its tenant was being served, not idle, until then.
  void requeue(uint32_t t);
  //! A waiting request of tenant t left the queue (started, cancelled or ended while waiting).
  void dequeue(uint32_t t);
  //! Service delivered to tenant t: input tokens computed as prefill, output tokens generated.
  void charge(uint32_t t, uint64_t input_tokens, uint64_t output_tokens);

  //! A new tenant table (a configuration reload). New tenant i is old tenant from[i] (same name)
  //! and keeps its counter, or is new and starts where a tenant becoming backlogged would be
  //! lifted to, so it neither banks credit nor owes any; waiting[i]: its requests waiting now.
  void reconfigure(std::vector<double> weights, std::span<const std::optional<uint32_t>> from,
                   std::vector<uint32_t> waiting);

  //! Every tenant's counter, in weighted tokens / weight.
  std::span<const double> counters() const { return counters_; }
  //! Whether tenant t has requests waiting.
  bool backlogged(uint32_t t) const { return waiting_[t] > 0; }

 private:
  void lift(uint32_t t);
  //! The counter a tenant becoming backlogged is raised to (see above); nothing when no tenant
  //! other than `except` is backlogged and none has left.
  std::optional<double> floor(std::optional<uint32_t> except) const;

  std::vector<double> weights_;
  vtc_cost cost_;
  std::vector<double> counters_;
  std::vector<uint32_t> waiting_;      // requests waiting, per tenant
  std::optional<uint32_t> last_left_;  // the tenant that last stopped being backlogged
};

}  // namespace hearth
