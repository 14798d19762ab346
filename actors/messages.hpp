#pragma once
// Every message the actors exchange, in one place: the atoms, the payload types' inspect
// functions (so CAF can print and, later, serialize them) and, per actor, the messages it
// handles. Payload types themselves live with their logic (core/, kernels/).
//
// admission   (submit, request_id, request, actor sink, ns)   validate, queue limits; to scheduler
//                                                             (ns: steady-clock time of submission)
//             (cancel, request_id)                            forwarded, keeping the order
//             (dequeued, vector<request_id>)                  started (or ended) waiting: queue accounting
//             (finished, vector<request_id>, vector<uint32>)  ended, with completion tokens: bucket refunds
//             (tenants, vector<tenant_config>) -> bool        new tenant quotas for the next request
//             (drain)                                         refuse new work from now on
// scheduler   (enqueue, request_id, request, actor sink, ns)  from admission
//             (cancel, request_id)
//             (policy, string) -> bool                        switch the policy at the next step
//             (tenants, vector<tenant_config>) -> bool        new tenant table at the next step
//             (gauges) -> scheduler_gauges
//             (drain) -> bool                                 end every request (shutdown)
//             (fail, string why)                              the engine failed: end every request
//                                                             with `internal`, then stop
//             (overdue, size_t lane, uint64 step)             that step's timeout: if it is still out,
//                                                             the backend hangs (fail)
// worker      step -> step_result                             one iteration on the backend
//             (ready) -> worker_info                          after pinning and loading
// metrics     (records, vector<request_record>)
//             (rejected, string tenant, reject_reason)
//             (gauges, scheduler_gauges)
//             (stepped, step_sample)                          one finished iteration
//             (tenants, vector<tenant_config>) -> bool        the names counted each on its own
//             (stats) -> metrics_snapshot
//             (stats, string tenant) -> metrics_snapshot      the engine's figures and that tenant's
// supervisor  (monitors every other actor; handles no message of its own)
// sink        request_event                                   what every client of the engine gets

#include <caf/all.hpp>

#include "actors/metrics_types.hpp"
#include "actors/worker.hpp"
#include "core/request.hpp"
#include "core/scheduler_core.hpp"
#include "core/step.hpp"

namespace hearth {

using submit_atom = caf::atom_constant<caf::atom("submit")>;
using enqueue_atom = caf::atom_constant<caf::atom("enqueue")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using dequeued_atom = caf::atom_constant<caf::atom("dequeued")>;
using finished_atom = caf::atom_constant<caf::atom("finished")>;
using tenants_atom = caf::atom_constant<caf::atom("tenants")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using policy_atom = caf::atom_constant<caf::atom("policy")>;
using gauges_atom = caf::atom_constant<caf::atom("gauges")>;
using records_atom = caf::atom_constant<caf::atom("records")>;
using rejected_atom = caf::atom_constant<caf::atom("rejected")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using stepped_atom = caf::atom_constant<caf::atom("stepped")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;
using fail_atom = caf::atom_constant<caf::atom("fail")>;
using overdue_atom = caf::atom_constant<caf::atom("overdue")>;
using alive_atom = caf::atom_constant<caf::atom("alive")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_info& x) {
  return f(caf::meta::type_name("worker_info"), x.n_ctx, x.n_vocab, x.n_blocks, x.block_size, x.threads,
           x.cpus);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  return f(caf::meta::type_name("sampling_params"), x.temperature, x.top_k, x.top_p, x.min_p,
           x.repetition_penalty, x.repeat_last_n, x.seed, x.banned);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request& x) {
  return f(caf::meta::type_name("request"), x.tenant, x.prompt, x.max_tokens, x.sampling, x.stop,
           x.share_prefix, x.ignore_eos);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_config& x) {
  return f(caf::meta::type_name("tenant_config"), x.name, x.key, x.http_key_sha256, x.cls, x.weight,
           x.slo.ttft_ms, x.slo.itl_ms, x.slo.itl_quantile, x.quota.max_concurrent, x.quota.max_queued,
           x.quota.max_prompt_tokens, x.quota.tokens_per_minute, x.share_prefix, x.admin);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage& x) {
  return f(caf::meta::type_name("usage"), x.prompt_tokens, x.completion_tokens, x.cached_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, timings& x) {
  return f(caf::meta::type_name("timings"), x.queue_ms, x.ttft_ms, x.prefill_ms, x.first_step_ms,
           x.mean_itl_ms, x.e2e_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_event& x) {
  return f(caf::meta::type_name("request_event"), x.id, x.kind, x.token, x.index, x.text, x.finish, x.reason,
           x.message, x.retry_after_ms, x.use, x.time, x.preemptions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_seq& x) {
  return f(caf::meta::type_name("step_seq"), x.id, x.tokens, x.start_pos, x.blocks, x.sample, x.sampling,
           x.draw, x.recent, x.copy_in);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step& x) {
  return f(caf::meta::type_name("step"), x.number, x.kind, x.seqs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_result& x) {
  return f(caf::meta::type_name("step_result"), x.number, x.sampled, x.compute_ms, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_record& x) {
  return f(caf::meta::type_name("request_record"), x.id, x.tenant, x.kind, x.finish, x.reason, x.use, x.time,
           x.preemptions, x.arrival_s, x.token_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_cache_stats& x) {
  return f(caf::meta::type_name("kv_cache_stats"), x.n_blocks, x.used, x.cached, x.hits, x.lookups,
           x.evictions);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_load& x) {
  return f(caf::meta::type_name("tenant_load"), x.tenant, x.waiting, x.running);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_gauges& x) {
  return f(caf::meta::type_name("scheduler_gauges"), x.waiting, x.running, x.preemptions, x.steps,
           x.prefill_tokens, x.decode_tokens, x.kv, x.compute_ms, x.overhead_ms, x.tenants);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latency_summary& x) {
  return f(caf::meta::type_name("latency_summary"), x.count, x.mean, x.p50, x.p90, x.p99, x.max, x.sum,
           x.at_most);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, tenant_metrics& x) {
  return f(caf::meta::type_name("tenant_metrics"), x.tenant, x.done, x.cancelled, x.errors, x.length,
           x.rejected, x.prompt_tokens, x.completion_tokens, x.cached_tokens, x.ttft, x.itl, x.e2e, x.queue);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_sample& x) {
  return f(caf::meta::type_name("step_sample"), x.seqs, x.prefill_tokens, x.decode_tokens, x.step_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_metrics& x) {
  return f(caf::meta::type_name("step_metrics"), x.seqs, x.prefill_tokens, x.decode_tokens, x.step_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metrics_snapshot& x) {
  return f(caf::meta::type_name("metrics_snapshot"), x.uptime_s, x.tenants, x.gauges, x.steps);
}

//! Registers every payload type with the actor system's configuration.
void add_message_types(caf::actor_system_config& cfg);

}  // namespace hearth
