// scheduler_core's planning of a step (core/scheduler_core.hpp says how the budget is handed
// out): decodes first, then prefill chunks in the policy's order, preempting when blocks run out.
#include <cassert>

#include "core/scheduler_core.hpp"
#include "core/scheduler_sequence.hpp"

namespace hearth {

step scheduler_core::plan(double now_s, step_kind kind) {
  plan_state ps{{next_step_, kind, {}}, kind, cfg_.max_batched_tokens, 0, now_s};
  if (kind != step_kind::prefill) plan_decodes(ps);
  if (copy_handoff_ && kind == step_kind::decode) list_copy_in(ps.out);
  if (kind != step_kind::decode) {
    // The policy may hold prefill back so the step stays short (decode protection).
    if (const auto cap = policy_->prefill_cap(snapshot(views(), now_s)))
      ps.budget = std::min(ps.budget, *cap);
    plan_prefills(ps);
  }
  if (!ps.out.seqs.empty()) {
    ++next_step_;
    ++steps_;
    for (const auto& e : ps.out.seqs) find(e.id)->busy = true;
  }
  return std::move(ps.out);
}

// Which blocks each seq of a decode step must copy in, and the decode pool holding them from
// then on. Only once the step is planned: a seq preempted meanwhile leaves the step, and had its
// blocks been marked as it entered, its cached prompt blocks (and a later seq's share of them)
// would count as copied though no step copied them, and whoever matched them next would read
// blocks the decode pool never received.
void scheduler_core::list_copy_in(step& st) {
  const uint32_t bs = kv_.block_size();
  for (step_seq& e : st.seqs) {
    // The decode worker reads every position before start_pos and writes start_pos.
    const size_t filled = (e.start_pos + bs - 1) / bs;
    for (size_t i = 0; i < e.blocks.size(); ++i) {
      if (i < filled && !in_decode_pool_[e.blocks[i]]) e.copy_in.push_back(e.blocks[i]);
      in_decode_pool_[e.blocks[i]] = true;
    }
  }
}

// Blocks free now; never preempts (waiting requests do not push running ones out).
bool scheduler_core::grow(sequence& s, uint32_t n_positions) {
  const uint32_t bs = kv_.block_size();
  while (s.blocks.size() * bs < n_positions) {
    const auto b = kv_.allocate();
    if (!b) return false;
    s.blocks.push_back(*b);
    if (copy_handoff_) in_decode_pool_[*b] = false;
  }
  return true;
}

// Blocks for n_positions, preempting victims the policy picks; false when none is left.
bool scheduler_core::ensure_blocks(sequence& s, uint32_t n_positions, plan_state& ps) {
  while (!grow(s, n_positions)) {
    const auto victim = pick_victim(s, ps);
    if (!victim) return false;
    preempt(*running_[*victim], ps);
  }
  return true;
}

std::optional<uint32_t> scheduler_core::pick_victim(const sequence& needy, const plan_state& ps) {
  std::vector<uint32_t> candidates;
  for (uint32_t i = 0; i < running_.size(); ++i) {
    const sequence& r = *running_[i];
    // Not one started in this very step: the policy ranked it ahead of whoever needs the block.
    if (&r != &needy && !r.busy && !r.pinned(cfg_.max_preemptions) && !r.blocks.empty() &&
        r.started_in != ps.out.number)
      candidates.push_back(i);
  }
  if (candidates.empty()) return std::nullopt;
  const snapshot_views v = views();
  return policy_->pick_victim(snapshot(v, ps.now_s), candidates);
}

void scheduler_core::preempt(sequence& victim, plan_state& ps) {
  // Dropped from this step if it was already in it; its budget goes back.
  auto& seqs = ps.out.seqs;
  if (auto it = std::ranges::find(seqs, victim.id, &step_seq::id); it != seqs.end()) {
    ps.budget += static_cast<uint32_t>(it->tokens.size());
    ps.partial -= it->sample ? 0 : 1;
    seqs.erase(it);
  }
  kv_.release(victim.blocks);
  victim.blocks.clear();
  victim.computed = 0;
  victim.n_keyed = 0;
  victim.last_key = kv_cache::root_key;
  victim.running = false;
  ++victim.preemptions;
  ++preemptions_;
  erase_one(running_, &victim);
  // Back in arrival order, so a fair policy sees it where it was.
  auto pos =
      std::ranges::find_if(waiting_, [&](const sequence* w) { return w->arrival_s > victim.arrival_s; });
  enter_waiting(victim, pos);
}

void scheduler_core::plan_decodes(plan_state& ps) {
  const std::vector<sequence*> order = running_;  // preemption edits running_
  for (sequence* s : order) {
    if (!s->running || s->busy || !s->prefilled() || ps.budget == 0) continue;
    if (!ensure_blocks(*s, s->computed + 1, ps)) {
      preempt(*s, ps);  // nobody else can give way: it recomputes later
      continue;
    }
    add_chunk(*s, 1, ps);
  }
}

// Waiting requests and running ones mid-prefill share the prefill budget in the policy's order,
// so a voice turn that arrives while a long document is being prefilled goes ahead of it.
void scheduler_core::plan_prefills(plan_state& ps) {
  const snapshot_views v = views();
  if (v.prefill.empty()) return;
  const auto order = policy_->order_waiting(snapshot(v, ps.now_s));
  std::vector<uint32_t> running(max_concurrent_.size(), 0);  // per tenant slot; none without tenants
  if (!running.empty())
    for (const sequence* r : running_) ++running[r->tenant];
  bool starting = true;  // false once a waiting request found no room
  for (uint32_t i : order) {
    if (ps.budget == 0 || ps.out.seqs.size() >= cfg_.max_seqs) break;
    sequence& s = *v.prefill[i];
    if (i >= v.n_queued) {                     // running when the plan began
      if (s.running) continue_prefill(s, ps);  // (not preempted meanwhile)
      continue;
    }
    if (!starting || running_.size() >= cfg_.max_seqs) continue;
    // A tenant at its max_concurrent waits for one of its own to end; others go ahead of it.
    if (!running.empty() && max_concurrent_[s.tenant] > 0 && running[s.tenant] >= max_concurrent_[s.tenant])
      continue;
    const start_result started = start(s, ps);
    // First come keeps its place: no one overtakes a request for which the pool has no room.
    if (started == start_result::no_room) starting = false;
    if (started == start_result::started && !running.empty()) ++running[s.tenant];
  }
}

void scheduler_core::continue_prefill(sequence& s, plan_state& ps) {
  const auto total = static_cast<uint32_t>(s.tokens.size());
  uint32_t n = std::min<uint32_t>(ps.budget, total - s.computed);
  if (cfg_.long_prefill_threshold > 0) n = std::min(n, cfg_.long_prefill_threshold);
  if (s.computed + n < total && ps.partial >= cfg_.max_partial_prefills) return;
  if (!ensure_blocks(s, s.computed + 1, ps)) {
    preempt(s, ps);
    return;
  }
  grow(s, s.computed + n);  // what the pool has; the chunk shrinks to the blocks held
  n = std::min<uint32_t>(n, static_cast<uint32_t>(s.blocks.size()) * kv_.block_size() - s.computed);
  if (s.computed + n < total && ps.partial >= cfg_.max_partial_prefills) return;
  add_chunk(s, n, ps);
}

scheduler_core::start_result scheduler_core::start(sequence& s, plan_state& ps) {
  const uint32_t bs = kv_.block_size();
  const auto total = static_cast<uint32_t>(s.tokens.size());
  const uint32_t max_chunk =
      cfg_.long_prefill_threshold > 0 ? std::min(ps.budget, cfg_.long_prefill_threshold) : ps.budget;
  // Only a prompt left unfinished by this step is a partial prefill: when their slots are taken,
  // short prompts (a voice turn) still start, overtaking the long ones.
  if (ps.partial >= cfg_.max_partial_prefills && total > max_chunk) return start_result::skipped;
  // At least one token is computed, so the step yields logits to sample from.
  auto m = kv_.match_prefix(s.tokens, s.salt, (total - 1) / bs);
  s.blocks = std::move(m.blocks);
  s.n_keyed = static_cast<uint32_t>(s.blocks.size());
  s.last_key = m.last_key;
  s.computed = s.n_keyed * bs;
  const uint64_t room = (uint64_t{s.blocks.size()} + kv_.available()) * bs - s.computed;
  const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>({max_chunk, total - s.computed, room}));
  // A request at its preemption bound holds every block it can need before it runs again.
  const uint32_t reserve =
      s.pinned(cfg_.max_preemptions) ? std::min(n_ctx_, s.n_prompt + s.req.max_tokens) : s.computed + n;
  const bool partial = s.computed + n < total;
  if (n == 0 || reserve > s.computed + room || (partial && ps.partial >= cfg_.max_partial_prefills)) {
    kv_.release(s.blocks);
    s.blocks.clear();
    s.computed = 0;
    return start_result::no_room;
  }
  grow(s, reserve);
  if (!s.started_once) {
    s.started_once = true;
    s.cached_tokens = s.computed;
    s.first_step_s = ps.now_s;
    dequeued_.push_back(s.id);
  }
  s.running = true;
  s.started_in = ps.out.number;
  leave_waiting(s);
  running_.push_back(&s);
  add_chunk(s, n, ps);
  return start_result::started;
}

void scheduler_core::add_chunk(sequence& s, uint32_t n, plan_state& ps) {
  assert(n >= 1 && n <= ps.budget);
  step_seq e;
  e.id = s.id;
  e.tokens.assign(s.tokens.begin() + s.computed, s.tokens.begin() + s.computed + n);
  e.start_pos = s.computed;
  const uint32_t bs = kv_.block_size();
  e.blocks.assign(s.blocks.begin(), s.blocks.begin() + (s.computed + n + bs - 1) / bs);
  e.sample = s.computed + n == s.tokens.size();
  if (e.sample) {
    if (s.draws == 0) s.sample_step_s = ps.now_s;  // a later one replaces it after a preemption
    e.sampling = s.req.sampling;
    e.draw = s.draws;
    if (s.req.sampling.repetition_penalty != 1.0f) {
      const size_t k = std::min<size_t>(s.req.sampling.repeat_last_n, s.tokens.size());
      e.recent.assign(s.tokens.end() - static_cast<ptrdiff_t>(k), s.tokens.end());
    }
  }
  ps.budget -= n;
  ps.partial += e.sample ? 0 : 1;
  ps.out.seqs.push_back(std::move(e));
}

}  // namespace hearth
