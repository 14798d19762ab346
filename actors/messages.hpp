#pragma once
// Every message the actors exchange, in one place: the atoms, each actor's interface as a CAF
// typed actor (so a message an actor does not handle, or a reply of the wrong type, fails to
// compile), and the payload types' inspect functions (so CAF can print and, later, serialize
// them). Payload types themselves live with their logic (core/, kernels/).

#include <caf/all.hpp>

#include "actors/metrics_types.hpp"
#include "actors/worker_info.hpp"
#include "actors/worker_join.hpp"
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
using join_atom = caf::atom_constant<caf::atom("join")>;
using kv_read_atom = caf::atom_constant<caf::atom("kv_read")>;
using leave_atom = caf::atom_constant<caf::atom("leave")>;

//! What every client of the engine gets: each event of its requests.
using sink_actor = caf::typed_actor<caf::reacts_to<request_event>>;

//! One iteration on the backend; (ready) once pinned and loaded, an error if that failed;
//! (kv_read, block ids) the bytes of those blocks of its pool, for a decode side on another node
//! (kv_bytes' layout; a worker in another process answers it beside the step it runs).
using worker_actor =
    caf::typed_actor<caf::replies_to<step>::with<step_result>, caf::replies_to<ready_atom>::with<worker_info>,
                     caf::replies_to<kv_read_atom, std::vector<uint32_t>>::with<kv_bytes>>;

//! A worker in another process (`hearth worker`, actors/worker_node.hpp) is published as a
//! dynamically typed actor that takes a worker's messages and, first, (join_atom, join_hello)
//! answered with its worker_info or an error naming what differs (check_join); steps before a
//! join are refused. Not a typed actor: CAF refuses to connect to one whose interface differs
//! without saying how, where the join says which build or file differs.

using metrics_actor =
    caf::typed_actor<caf::reacts_to<records_atom, std::vector<request_record>>,
                     caf::reacts_to<rejected_atom, std::string, reject_reason>,  // tenant, why
                     caf::reacts_to<gauges_atom, scheduler_gauges>,
                     caf::reacts_to<stepped_atom, step_sample>,  // one finished iteration
                     // the names counted each on their own
                     caf::replies_to<tenants_atom, std::vector<tenant_config>>::with<bool>,
                     caf::replies_to<stats_atom>::with<metrics_snapshot>,
                     // the engine's figures and that tenant's
                     caf::replies_to<stats_atom, std::string>::with<metrics_snapshot>>;

using scheduler_actor =
    caf::typed_actor<caf::reacts_to<enqueue_atom, request_id, request, sink_actor, int64_t>,  // from
                                                                                              // admission
                     caf::reacts_to<cancel_atom, request_id>,
                     // switch the policy / the tenant table at the next step
                     caf::replies_to<policy_atom, std::string>::with<bool>,
                     caf::replies_to<tenants_atom, std::vector<tenant_config>>::with<bool>,
                     caf::replies_to<gauges_atom>::with<scheduler_gauges>,
                     caf::replies_to<drain_atom>::with<bool>,  // end every request (shutdown)
                     // the engine failed: end every request with `internal`, then stop
                     caf::reacts_to<fail_atom, std::string>,
                     // its own timers: the watchdog's tick, and a step's timeout (worker group,
                     // lane, the group's generation, step number): if that step is still out,
                     // the backend hangs
                     caf::reacts_to<alive_atom>,
                     caf::reacts_to<overdue_atom, size_t, size_t, uint64_t, uint64_t>,
                     // a lost worker of that group joined again (actors/worker_rejoin.hpp)
                     caf::reacts_to<join_atom, size_t, worker_actor, worker_info>,
                     // a remote worker stopped by its operator says so before its connection
                     // closes (actors/worker_node.cpp): answered once it is dropped
                     caf::replies_to<leave_atom>::with<bool>>;

using admission_actor =
    caf::typed_actor<caf::reacts_to<ready_atom, scheduler_actor>,  // where accepted requests go
                                                                   // validate, queue limits, then to the
                                                                   // scheduler (ns: steady-clock time of
                                                                   // submission)
                     caf::reacts_to<submit_atom, request_id, request, sink_actor, int64_t>,
                     caf::reacts_to<cancel_atom, request_id>,  // forwarded, keeping the order
                     // started (or ended) waiting: queue accounting
                     caf::reacts_to<dequeued_atom, std::vector<request_id>>,
                     // ended, with completion tokens: bucket refunds
                     caf::reacts_to<finished_atom, std::vector<request_id>, std::vector<uint32_t>>,
                     // new tenant quotas for the next request
                     caf::replies_to<tenants_atom, std::vector<tenant_config>>::with<bool>,
                     // refuse new work from now on; answered once the scheduler has ended it all
                     caf::replies_to<drain_atom>::with<bool>>;

//! The supervisor monitors every other actor; it takes no message of its own (the one it
//! declares keeps its behavior non-empty, so it lives).
using supervisor_actor = caf::typed_actor<caf::reacts_to<ready_atom>>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_info& x) {
  return f(caf::meta::type_name("worker_info"), x.n_ctx, x.n_vocab, x.n_blocks, x.block_size, x.block_bytes,
           x.threads, x.cpus, x.device);
}

// What crosses to a worker in another process (step, step_seq, sampling_params, step_result,
// worker_info, join_hello, kv_bytes): a field added to one of them must be in its inspect() here, and
// worker_wire_version bumped. Their sizes (x86-64, libstdc++) stop the build until it is.
#if defined(__x86_64__) && defined(__GLIBCXX__)
static_assert(sizeof(step_seq) == 184 && sizeof(step) == 64 && sizeof(sampling_params) == 56 &&
                  sizeof(step_result) == 72 && sizeof(worker_info) == 96 && sizeof(join_hello) == 104,
              "a type that crosses to a remote worker changed: update its inspect() and worker_wire_version, "
              "then these sizes");
#endif

// The join's layout is fixed for good (actors/worker_join.hpp): a build of another wire version
// still reads it, and says what differs.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_hello& x) {
  return f(caf::meta::type_name("join_hello"), x.wire_version, x.build, x.model_file, x.model_sha256);
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
  return f(caf::meta::type_name("step"), x.number, x.kind, x.seqs, x.kv_blocks);
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
typename Inspector::result_type inspect(Inspector& f, worker_gauges& x) {
  return f(caf::meta::type_name("worker_gauges"), x.name, x.device, x.lost, x.waiting, x.running, x.steps,
           x.kv_blocks_used, x.kv_blocks_total, x.step_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, scheduler_gauges& x) {
  return f(caf::meta::type_name("scheduler_gauges"), x.waiting, x.running, x.preemptions, x.steps,
           x.prefill_tokens, x.decode_tokens, x.kv, x.compute_ms, x.overhead_ms, x.kv_shipped_bytes,
           x.kv_ship_ms, x.tenants, x.workers);
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

//! An actor system's configuration as every Hearth process sets it: one scheduler thread, the
//! payload types; `networked`: CAF's middleman too (a server with remote workers, `hearth
//! worker`), with heartbeats, so a peer that went silent is noticed; with `credentials`
//! (keygen --worker's folder), CAF's OpenSSL transport beside it, which proves both ends.
caf::actor_system_config& configure_actor_system(caf::actor_system_config& cfg, bool networked,
                                                 const std::string& credentials = {});

//! Publishes `a` on port (0: any free one) of host (nullptr: every address), over TLS when `tls`
//! (the system configured with credentials); the port it got.
caf::expected<uint16_t> publish_actor(caf::actor_system& sys, const caf::actor& a, uint16_t port,
                                      const char* host, bool tls);
//! The actor published at host:port, over TLS when `tls`.
caf::expected<caf::actor> connect_actor(caf::actor_system& sys, const std::string& host, uint16_t port,
                                        bool tls);

//! Registers every payload type with the actor system's configuration: the ones that cross to
//! a worker in another process (step, step_result, worker_info, join_hello) must be, or CAF
//! refuses to send them there (in-process messages need no registration).
void add_message_types(caf::actor_system_config& cfg);

//! Why a monitored actor stopped, in words, `role` naming it: "worker tcp://h:1 is unreachable:
//! the connection to it was lost", "... was shut down", "... stopped: <its error>".
std::string down_text(caf::actor_system& sys, const std::string& role, const caf::error& reason);

//! The sentence an error carries: its text when it has one (a refused join's, a worker's "the
//! backend threw at step 3: ..."), else CAF's rendering of it.
std::string error_text(caf::actor_system& sys, const caf::error& err);

}  // namespace hearth
