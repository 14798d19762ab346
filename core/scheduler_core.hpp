#pragma once
// The scheduler's decisions, without actors: which requests run in the next step and with how
// many tokens, who is preempted when KV blocks run out, and what a finished step means for each
// request (tokens appended, text streamed, stop conditions, blocks freed). The scheduler actor
// feeds it messages and the clock; tests and `hearth bench engine` drive it directly.
//
// A step, in the order budget is handed out (Sarathi-Serve):
//   1. every running request past its prompt gets its decode token;
//   2. the rest is prefill, in the policy's order over the waiting requests and the running
//      ones mid-prefill together (so a voice turn overtakes a long document's next chunk):
//      a request mid-prefill gets its next chunk, a waiting one starts, while budget and
//      sequence slots allow (passing over those of a tenant at its quota.max_concurrent).
//      A chunk that leaves its prompt unfinished takes one of the step's max_partial_prefills
//      slots; when none is free, prompts that finish in this step go ahead of it.
// A chunk is at most long_prefill_threshold tokens, so one long prompt cannot take a whole step.
// Disaggregated with KV handoff by copy, each worker has its own pool and a block id names the
// same slot in both: a decode step lists the blocks the decode worker must first copy in from
// the prefill worker's pool (those it does not hold yet), and only blocks computed by prefill
// steps enter the prefix cache, since prefill steps read them from the prefill pool.
//
// When a running request needs a block and none is free, the policy picks a victim among the
// others; its blocks are freed and it recomputes later. A request preempted max_preemptions
// times reserves all the blocks it can ever need before it starts again, so it is never
// preempted again: the engine cannot livelock.

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "core/kv_cache.hpp"
#include "core/step.hpp"
#include "core/step_time.hpp"
#include "core/stop_matcher.hpp"
#include "model/tokenizer.hpp"
#include "policies/policy.hpp"
#include "tenants/service_counters.hpp"

namespace hearth {

//! What the metrics actor keeps of a finished request.
struct request_record {
  request_id id = 0;
  std::string tenant;
  event_kind kind = event_kind::done;
  finish_reason finish = finish_reason::none;
  reject_reason reason = reject_reason::none;
  usage use;
  timings time;
  uint32_t preemptions = 0;
  double arrival_s = 0;
  std::vector<float> token_ms;  //!< each completion token's time since arrival
};

//! One tenant's share of the queue and the running batch.
struct tenant_load {
  std::string tenant;
  uint32_t waiting = 0;
  uint32_t running = 0;
};

//! One worker's share, when the engine has several (data parallel) or one in another process.
struct worker_gauges {
  std::string name;    //!< "worker" (this process) or "worker tcp://HOST:PORT"
  std::string device;  //!< what its backend computes on
  bool lost = false;   //!< its connection broke; its requests moved to the others
  uint32_t waiting = 0;
  uint32_t running = 0;
  uint64_t steps = 0;
  uint32_t kv_blocks_used = 0;
  uint32_t kv_blocks_total = 0;
  double step_ms = 0;  //!< mean compute time of its steps
};

struct scheduler_gauges {
  uint32_t waiting = 0;
  uint32_t running = 0;
  uint64_t preemptions = 0;
  uint64_t steps = 0;
  uint64_t prefill_tokens = 0;  //!< tokens computed as prefill (recompute included)
  uint64_t decode_tokens = 0;
  kv_cache_stats kv;
  // The iteration loop's time, summed over steps (kept by the scheduler actor): inside the
  // backend and sampler, and everything else between two steps (messages, planning, bookkeeping).
  double compute_ms = 0;
  double overhead_ms = 0;
  // Disaggregated with a side on another node: KV blocks' bytes put into decode steps, and the
  // time spent getting them (a read of this process's prefill pool, or the remote prefill
  // worker's read and its reply); their way on to a remote decode worker is in its step's time.
  uint64_t kv_shipped_bytes = 0;
  double kv_ship_ms = 0;
  std::vector<tenant_load> tenants = {};    //!< every tenant with a request waiting or running
  std::vector<worker_gauges> workers = {};  //!< each worker's, in configuration order
};

class scheduler_core {
 public:
  //! n_ctx: the model's context; the pool has n_blocks blocks of block_size positions.
  scheduler_core(const engine_config& cfg, const tokenizer& tok, uint32_t n_ctx, uint32_t n_blocks,
                 uint32_t block_size, std::unique_ptr<policy> pol);
  ~scheduler_core();

  //! Queues an admitted request (already validated: fits the context and the pool) that
  //! reached the engine at arrival_s (engine clock, seconds; timings count from it).
  void add(request_id id, request r, double arrival_s);
  //! Cancels a request: at once when no step is computing it, else when that step completes.
  //! Appends its terminal event (if it ends now). False for an unknown id.
  bool cancel(request_id id, double now_s, std::vector<request_event>& events);
  //! The next step for a worker of the given kind; empty when nothing can run now. A colocated
  //! worker runs mixed steps; disaggregated, a prefill worker runs prefill steps (phases 2-3)
  //! while a decode worker runs decode steps (phase 1). Requests in a step are busy, left out
  //! of other steps, until complete() or abort() is called with it.
  step plan(double now_s, step_kind kind = step_kind::mixed);
  //! Applies a computed step: appends events (tokens, terminal ones) for its requests.
  void complete(const step& s, const step_result& r, double now_s, std::vector<request_event>& events);
  //! Ends every request of a failed step with an `internal` error.
  void abort(const step& s, const std::string& why, double now_s, std::vector<request_event>& events);
  //! Ends every request with `reason` and the message `why` (shutdown, or a failed engine).
  void drain(reject_reason reason, const std::string& why, double now_s, std::vector<request_event>& events);

  //! Moves a request to another core, whose worker carries on with it (data parallel: this
  //! core's worker is lost). What it streamed stays streamed; its blocks here are freed and its
  //! step in flight, if any, is forgotten; `to` recomputes its prompt and tokens so far and draws
  //! on from the same draw index, so a seeded request's tokens are those it would have drawn
  //! here. One cancelled meanwhile ends here instead. Unknown ids are ignored.
  void hand_over(request_id id, scheduler_core& to, double now_s, std::vector<request_event>& events);
  //! The requests it holds, in id order.
  std::vector<request_id> ids() const;

  //! What its requests still need (where to place the next one: core/worker_choice.hpp).
  struct outstanding {
    uint64_t prefill_tokens = 0;  //!< positions not yet computed, up to each one's last token
    uint64_t decode_tokens = 0;   //!< completion tokens still allowed (max_tokens less those drawn)
    uint32_t sequences = 0;
  };
  outstanding load() const;
  //! Tokens of r's prompt that its prefix cache would serve now (r's id salts a private one).
  uint32_t cached_tokens(const request& r, request_id id) const;

  //! Switches the policy between two steps.
  void set_policy(std::unique_ptr<policy> pol);
  //! Replaces the tenant table (validated; empty = no tenant configuration) between two steps:
  //! SLO targets, weights, classes and max_concurrent apply to the next plan. VTC counters
  //! follow tenant names (a new tenant starts where a returning one would be lifted to);
  //! waiting and running requests keep their places, only their tenant slots are looked up again.
  void set_tenants(std::vector<tenant_config> tenants);
  //! Records of requests that ended since the last call (for metrics).
  std::vector<request_record> take_records();
  //! Ids that left the waiting queue for the first time since the last call (for admission's
  //! queue accounting).
  std::vector<request_id> take_dequeued();

  scheduler_gauges gauges() const;
  bool has_work() const { return !seqs_.empty(); }
  const kv_cache& kv() const { return kv_; }
  const step_time_model& step_time() const { return step_time_.model(); }
  //! VTC counters per tenant slot: the configured tenants in order, then the default slot;
  //! empty without tenant configuration.
  std::span<const double> service() const { return service_.counters(); }

 private:
  struct sequence;
  struct plan_state;

  sequence* find(request_id id);
  bool ensure_blocks(sequence& s, uint32_t n_positions, plan_state& ps);
  bool grow(sequence& s, uint32_t n_positions);
  void preempt(sequence& victim, plan_state& ps);
  std::optional<uint32_t> pick_victim(const sequence& needy, const plan_state& ps);
  void plan_decodes(plan_state& ps);
  void plan_prefills(plan_state& ps);
  void continue_prefill(sequence& s, plan_state& ps);
  enum class start_result { started, skipped, no_room };
  start_result start(sequence& s, plan_state& ps);
  void add_chunk(sequence& s, uint32_t n, plan_state& ps);
  void list_copy_in(step& st);
  void offer_full_blocks(sequence& s);
  void accept_token(sequence& s, token_id t, double now_s, std::vector<request_event>& events);
  void count_gap(sequence& s, double now_s);
  void finish(sequence& s, event_kind kind, finish_reason fin, reject_reason why, std::string message,
              double now_s, std::vector<request_event>& events);
  request_view view_of(const sequence& s) const;
  void index_tenants();
  uint32_t slot_of(const std::string& tenant) const;
  void enter_waiting(sequence& s, std::vector<sequence*>::iterator pos);
  void leave_waiting(sequence& s);
  // What a policy sees. `waiting` holds every request with prompt left to compute: the waiting
  // queue, then the running requests mid-prefill (also in `running`); prefill[i] is waiting[i]'s.
  struct snapshot_views {
    std::vector<request_view> waiting, running;
    std::vector<sequence*> prefill;
    size_t n_queued = 0;  // waiting[0, n_queued) is the waiting queue
  };
  snapshot_views views();
  policy_snapshot snapshot(const snapshot_views& v, double now_s) const;

  engine_config cfg_;
  const tokenizer* tok_;
  uint32_t n_ctx_;
  kv_cache kv_;
  std::unique_ptr<policy> policy_;
  step_time_fit step_time_;
  // Configured tenants (cfg_.tenants) as policies see them, and their VTC service counters.
  std::vector<tenant_view> tenants_;  // service copied in from service_ for each snapshot
  std::unordered_map<std::string, uint32_t> tenant_index_;
  std::vector<uint32_t> max_concurrent_;  // per slot; 0 = unlimited
  service_counters service_;
  std::unordered_map<request_id, std::unique_ptr<sequence>> seqs_;
  std::vector<sequence*> waiting_;  // arrival order; the policy reorders a view of it
  std::vector<sequence*> running_;  // start order
  std::vector<request_record> records_;
  std::vector<request_id> dequeued_;
  // KV handoff by copy (disaggregated, two pools): which blocks the decode worker's pool holds.
  bool copy_handoff_;
  std::vector<bool> in_decode_pool_;
  uint64_t next_step_ = 1;
  uint64_t preemptions_ = 0, steps_ = 0, prefill_tokens_ = 0, decode_tokens_ = 0;
};

}  // namespace hearth
