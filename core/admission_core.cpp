#include "core/admission_core.hpp"

#include <cassert>

#include "kernels/sampler.hpp"

namespace hearth {

namespace {

// The share of the engine's queue limits a class may fill: under overload the queue refuses
// background requests at half full and standard ones at three quarters, keeping the rest for
// the classes above them.
double queue_share(tenant_class c) {
  switch (c) {
    case tenant_class::interactive:
      return 1.0;
    case tenant_class::standard:
      return 0.75;
    case tenant_class::background:
      return 0.5;
  }
  return 1.0;
}

std::string tenant_prefix(const tenant_config& t) {
  return "tenant '" + t.name + "': ";
}

}  // namespace

admission_core::admission_core(admission_limits limits, std::vector<tenant_config> tenants, double now_s)
    : limits_(limits) {
  set_tenants(std::move(tenants), now_s);
}

const tenant_config* admission_core::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tenants_[it->second];
}

uint32_t admission_core::queued(const std::string& tenant) const {
  const auto it = queued_.find(tenant);
  return it == queued_.end() ? 0 : it->second;
}

std::optional<refusal> admission_core::check(const request& r, double now_s) const {
  const auto& l = limits_;
  if (draining_) return refusal{reject_reason::shutting_down, "the engine is shutting down"};
  if (r.prompt.empty()) return refusal{reject_reason::bad_request, "prompt: empty"};
  for (token_id t : r.prompt) {
    if (t < 0 || static_cast<uint32_t>(t) >= l.n_vocab) {
      return refusal{reject_reason::bad_request,
                     "prompt: token " + std::to_string(t) + " is not in the vocabulary"};
    }
  }
  if (r.max_tokens == 0) return refusal{reject_reason::bad_request, "max_tokens: must be >= 1"};
  if (auto s = sampler::create(r.sampling); !s) return refusal{reject_reason::bad_request, s.error().message};
  const uint64_t need = uint64_t{r.prompt.size()} + r.max_tokens;
  if (need > l.n_ctx || need > l.pool_tokens) {
    return refusal{reject_reason::too_long,
                   "prompt (" + std::to_string(r.prompt.size()) + " tokens) + max_tokens (" +
                       std::to_string(r.max_tokens) + ") exceeds " +
                       (need > l.n_ctx ? "the context of " + std::to_string(l.n_ctx)
                                       : "the KV pool of " + std::to_string(l.pool_tokens)) +
                       " tokens"};
  }
  const tenant_config* t = find(r.tenant);
  if (t) {
    if (auto no = check_tenant(r, *t, now_s)) return no;
  }
  return check_queue(r, t);
}

std::optional<refusal> admission_core::check_tenant(const request& r, const tenant_config& t,
                                                    double now_s) const {
  const tenant_quota& q = t.quota;
  if (q.max_prompt_tokens > 0 && r.prompt.size() > q.max_prompt_tokens) {
    return refusal{reject_reason::too_long, tenant_prefix(t) + "prompt (" + std::to_string(r.prompt.size()) +
                                                " tokens) exceeds max_prompt_tokens (" +
                                                std::to_string(q.max_prompt_tokens) + ")"};
  }
  if (q.max_queued > 0 && queued(t.name) >= q.max_queued) {
    return refusal{reject_reason::over_quota, tenant_prefix(t) + std::to_string(q.max_queued) +
                                                  " requests queued (max_queued); retry later"};
  }
  const uint64_t tokens = uint64_t{r.prompt.size()} + r.max_tokens;
  if (const uint64_t wait_ms = buckets_.at(t.name).retry_after_ms(tokens, now_s); wait_ms > 0) {
    return refusal{reject_reason::over_quota,
                   tenant_prefix(t) + std::to_string(q.tokens_per_minute) +
                       " tokens per minute (prompt + max_tokens counted); retry after " +
                       std::to_string(wait_ms) + " ms",
                   wait_ms};
  }
  return std::nullopt;
}

std::optional<refusal> admission_core::check_queue(const request& r, const tenant_config* t) const {
  // Without tenant configuration there are no classes: everyone may fill the whole queue.
  const double share = tenants_.empty() ? 1.0 : queue_share(t ? t->cls : tenant_class::standard);
  const bool full_count = waiting_ + 1 > share * limits_.max_waiting;
  const bool full_tokens = static_cast<double>(waiting_tokens_ + r.prompt.size()) >
                           share * static_cast<double>(limits_.max_waiting_tokens);
  if (full_count || full_tokens) {
    return refusal{reject_reason::queue_full, share < 1.0
                                                  ? "the queue is full for this tenant's class; retry later"
                                                  : "the queue is full; retry later"};
  }
  return std::nullopt;
}

std::optional<refusal> admission_core::admit(request_id id, const request& r, double now_s) {
  if (auto no = check(r, now_s)) return no;
  const auto n_prompt = static_cast<uint32_t>(r.prompt.size());
  const bool limited = find(r.tenant) != nullptr;
  if (limited) {
    const bool taken = buckets_.at(r.tenant).try_take(uint64_t{n_prompt} + r.max_tokens, now_s);
    assert(taken && "admission_core: the bucket was checked");
    (void)taken;
  }
  ++waiting_;
  waiting_tokens_ += n_prompt;
  ++queued_[r.tenant];
  admitted_[id] = {r.tenant, n_prompt, limited ? r.max_tokens : 0, true};
  return std::nullopt;
}

void admission_core::dequeued(request_id id) {
  const auto it = admitted_.find(id);
  if (it == admitted_.end() || !it->second.waiting) return;
  admitted& a = it->second;
  a.waiting = false;
  --waiting_;
  waiting_tokens_ -= a.prompt_tokens;
  if (--queued_[a.tenant] == 0) queued_.erase(a.tenant);
}

void admission_core::finished(request_id id, uint32_t completion_tokens, double now_s) {
  dequeued(id);  // a no-op unless it ended while waiting and the scheduler did not say so
  const auto it = admitted_.find(id);
  if (it == admitted_.end()) return;
  const admitted& a = it->second;
  if (const auto b = buckets_.find(a.tenant); b != buckets_.end() && completion_tokens < a.reserved) {
    b->second.give_back(a.reserved - completion_tokens, now_s);
  }
  admitted_.erase(it);
}

void admission_core::set_tenants(std::vector<tenant_config> tenants, double now_s) {
  tenants_ = std::move(tenants);
  index_.clear();
  std::unordered_map<std::string, token_bucket> buckets;
  for (size_t i = 0; i < tenants_.size(); ++i) {
    const tenant_config& t = tenants_[i];
    index_.emplace(t.name, i);
    auto old = buckets_.extract(t.name);
    if (old) {
      old.mapped().set_rate(t.quota.tokens_per_minute, now_s);
      buckets.insert(std::move(old));
    } else {
      buckets.emplace(t.name, token_bucket(t.quota.tokens_per_minute, now_s));
    }
  }
  buckets_ = std::move(buckets);
}

}  // namespace hearth
