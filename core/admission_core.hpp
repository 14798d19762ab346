#pragma once
// Admission's decisions without actors: whether a request may enter the engine, and the
// accounting behind them: requests waiting (all of them, and per tenant), their prompt tokens,
// and each tenant's token bucket. The admission actor feeds it messages and the clock; the
// quota semantics are documented in docs/configuration.md ("Quotas").
//
// Checks, in order; the first that fails is the answer, and only an admitted request changes
// any state:
//   shutting_down  the engine is draining
//   bad_request    empty prompt, a token outside the vocabulary, max_tokens 0, bad sampling
//   too_long       prompt + max_tokens beyond the context or the KV pool; a prompt beyond the
//                  tenant's max_prompt_tokens
//   over_quota     the tenant has max_queued requests waiting; its bucket lacks
//                  prompt + max_tokens tokens (with retry_after_ms)
//   queue_full     the engine's max_waiting / max_waiting_tokens, of which, with tenants
//                  configured, a standard tenant may fill 3/4 and a background one 1/2, so
//                  under overload background work is refused first and interactive last
// max_concurrent is not checked here: the scheduler holds a tenant's extra requests back.
//
// Requests of a tenant that is not configured (development mode, where a client may name any
// tenant) share the default slot, as in the scheduler: standard class, no quotas.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/request.hpp"
#include "tenants/tenant_config.hpp"
#include "tenants/token_bucket.hpp"

namespace hearth {

struct admission_limits {
  uint32_t n_ctx = 0;
  uint32_t n_vocab = 0;
  uint64_t pool_tokens = 0;  //!< positions the KV pool holds
  uint32_t max_waiting = 0;
  uint64_t max_waiting_tokens = 0;
};

//! Why a request is refused: the reason and message of its `rejected` event.
struct refusal {
  reject_reason reason = reject_reason::none;
  std::string message;
  uint64_t retry_after_ms = 0;  //!< over_quota by rate: when the bucket will hold enough; 0 = unknown
};

class admission_core {
 public:
  //! tenants: as validated by check_tenants; empty = no tenant configuration.
  admission_core(admission_limits limits, std::vector<tenant_config> tenants, double now_s);

  //! Admits r (counted waiting; prompt + max_tokens taken from its tenant's bucket) or says
  //! why not.
  std::optional<refusal> admit(request_id id, const request& r, double now_s);
  //! Request `id` left the waiting queue for the first time (started, or ended while waiting).
  void dequeued(request_id id);
  //! Request `id` ended after `completion_tokens`: the unused rest of its max_tokens goes back
  //! to its tenant's bucket.
  void finished(request_id id, uint32_t completion_tokens, double now_s);
  //! A new tenant table (validated), for the next request: counts and buckets are kept by
  //! tenant name, a bucket keeping its level at its new rate.
  void set_tenants(std::vector<tenant_config> tenants, double now_s);
  //! Refuses every request from now on (shutdown).
  void drain() { draining_ = true; }

  uint32_t waiting() const { return waiting_; }
  uint64_t waiting_tokens() const { return waiting_tokens_; }
  //! Requests of `tenant` (by name) accepted and not yet started.
  uint32_t queued(const std::string& tenant) const;

 private:
  struct admitted {
    std::string tenant;
    uint32_t prompt_tokens = 0;
    uint32_t reserved = 0;  // completion tokens taken from its tenant's bucket (max_tokens, or 0)
    bool waiting = true;
  };

  std::optional<refusal> check(const request& r, double now_s) const;
  std::optional<refusal> check_tenant(const request& r, const tenant_config& t, double now_s) const;
  std::optional<refusal> check_queue(const request& r, const tenant_config* t) const;
  const tenant_config* find(const std::string& name) const;

  admission_limits limits_;
  std::vector<tenant_config> tenants_;
  std::unordered_map<std::string, size_t> index_;          // name -> tenants_
  std::unordered_map<std::string, token_bucket> buckets_;  // configured tenants, by name
  std::unordered_map<std::string, uint32_t> queued_;       // requests waiting, by tenant name
  std::unordered_map<request_id, admitted> admitted_;      // until their end
  uint32_t waiting_ = 0;
  uint64_t waiting_tokens_ = 0;
  bool draining_ = false;
};

}  // namespace hearth
