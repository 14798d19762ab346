#include "core/scheduler_core.hpp"

#include <algorithm>
#include <string_view>

#include "common/rng.hpp"
#include "core/scheduler_sequence.hpp"

namespace hearth {

namespace {

uint64_t salt_of(const request& r, request_id id) {
  // FNV-1a of the tenant, mixed: tenants never share prefix blocks, and a private request's salt
  // also mixes in its id so nobody else can match it.
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : r.tenant) h = (h ^ c) * 0x100000001b3ull;
  if (!r.share_prefix) h ^= splitmix64(id);
  return splitmix64(h);
}

// Requests of tenants missing from the configuration share this slot (standard, weight 1).
constexpr std::string_view default_tenant = "*";

// One weight per configured tenant, then the default slot's; none without configuration.
std::vector<double> tenant_weights(const engine_config& cfg) {
  if (cfg.tenants.empty()) return {};
  std::vector<double> w;
  for (const tenant_config& t : cfg.tenants) w.push_back(t.weight);
  w.push_back(1.0);
  return w;
}

}  // namespace

scheduler_core::scheduler_core(const engine_config& cfg, const tokenizer& tok, uint32_t n_ctx,
                               uint32_t n_blocks, uint32_t block_size, std::unique_ptr<policy> pol)
    : cfg_(cfg),
      tok_(&tok),
      n_ctx_(n_ctx),
      kv_(n_blocks, block_size),
      policy_(std::move(pol)),
      service_(tenant_weights(cfg)),
      copy_handoff_(cfg.mode == placement_mode::disaggregated && cfg.kv_handoff == kv_handoff_mode::copy),
      in_decode_pool_(copy_handoff_ ? n_blocks : 0, false) {
  index_tenants();
}

// tenants_ (whose names view cfg_.tenants), tenant_index_ and max_concurrent_ from cfg_.tenants.
void scheduler_core::index_tenants() {
  tenants_.clear();
  tenant_index_.clear();
  max_concurrent_.clear();
  if (cfg_.tenants.empty()) return;
  for (const tenant_config& t : cfg_.tenants) {
    tenant_index_.emplace(t.name, static_cast<uint32_t>(tenants_.size()));
    tenants_.push_back({t.name, t.cls, t.weight, t.slo.ttft_ms, t.slo.itl_ms, t.slo.itl_quantile, 0});
    max_concurrent_.push_back(t.quota.max_concurrent);
  }
  tenants_.push_back({default_tenant, tenant_class::standard, 1.0, 0, 0, 1, 0});
  max_concurrent_.push_back(0);
}

uint32_t scheduler_core::slot_of(const std::string& tenant) const {
  if (tenants_.empty()) return 0;
  const auto it = tenant_index_.find(tenant);
  return it != tenant_index_.end() ? it->second : static_cast<uint32_t>(tenants_.size() - 1);
}

void scheduler_core::set_tenants(std::vector<tenant_config> tenants) {
  // Each new slot's old slot, by name (the default slot is always last), so counters follow names.
  std::vector<std::optional<uint32_t>> from;
  if (!tenants.empty()) {
    for (const tenant_config& t : tenants) {
      const auto it = tenant_index_.find(t.name);
      from.push_back(it == tenant_index_.end() ? std::nullopt : std::optional(it->second));
    }
    from.push_back(tenants_.empty() ? std::nullopt
                                    : std::optional(static_cast<uint32_t>(tenants_.size() - 1)));
  }
  cfg_.tenants = std::move(tenants);
  index_tenants();
  // Queues keep their order; only the slot each request is accounted to may change.
  for (auto& [id, s] : seqs_) s->tenant = slot_of(s->req.tenant);
  std::vector<uint32_t> waiting(tenants_.size(), 0);
  if (!waiting.empty())
    for (const sequence* w : waiting_) ++waiting[w->tenant];
  service_.reconfigure(tenant_weights(cfg_), from, std::move(waiting));
}

scheduler_core::~scheduler_core() = default;

void scheduler_core::add(request_id id, request r, double arrival_s) {
  const uint64_t salt = salt_of(r, id);
  if (r.ignore_eos) r.sampling.banned = tok_->end_of_generation_tokens();
  auto s = std::make_unique<sequence>(id, std::move(r), salt, *tok_, arrival_s);
  s->tenant = slot_of(s->req.tenant);
  enter_waiting(*s, waiting_.end());
  seqs_.emplace(id, std::move(s));
}

scheduler_core::sequence* scheduler_core::find(request_id id) {
  const auto it = seqs_.find(id);
  return it == seqs_.end() ? nullptr : it->second.get();
}

bool scheduler_core::cancel(request_id id, double now_s, std::vector<request_event>& events) {
  sequence* s = find(id);
  if (!s) return false;
  if (s->busy) {
    s->cancelled = true;  // the step computing it ends it
  } else {
    finish(*s, event_kind::cancelled, finish_reason::none, reject_reason::none, "cancelled", now_s, events);
  }
  return true;
}

void scheduler_core::set_policy(std::unique_ptr<policy> pol) {
  policy_ = std::move(pol);
}

request_view scheduler_core::view_of(const sequence& s) const {
  request_view v;
  v.id = s.id;
  v.tenant = s.req.tenant;
  v.tenant_index = s.tenant;
  v.arrival_s = s.arrival_s;
  v.prompt_tokens = s.n_prompt;
  v.computed_tokens = s.computed;
  v.generated_tokens = s.generated();
  v.blocks = static_cast<uint32_t>(s.blocks.size());
  v.preemptions = s.preemptions;
  v.itl_gaps = s.itl_gaps;
  v.itl_misses = s.itl_misses;
  return v;
}

// The waiting queue's changes also drive the VTC counters' lift (new requests only).
void scheduler_core::enter_waiting(sequence& s, std::vector<sequence*>::iterator pos) {
  waiting_.insert(pos, &s);
  if (tenants_.empty()) return;
  if (s.preemptions > 0) {
    service_.requeue(s.tenant);
  } else {
    service_.enqueue(s.tenant);
  }
}

void scheduler_core::leave_waiting(sequence& s) {
  erase_one(waiting_, &s);
  if (!tenants_.empty()) service_.dequeue(s.tenant);
}

scheduler_core::snapshot_views scheduler_core::views() {
  for (size_t t = 0; t < tenants_.size(); ++t) tenants_[t].service = service_.counters()[t];
  snapshot_views v;
  v.waiting.reserve(waiting_.size());
  v.running.reserve(running_.size());
  for (sequence* w : waiting_) {
    v.waiting.push_back(view_of(*w));
    v.prefill.push_back(w);
  }
  v.n_queued = v.prefill.size();
  for (sequence* r : running_) {
    v.running.push_back(view_of(*r));
    if (r->prefilled() || r->busy) continue;
    v.waiting.push_back(v.running.back());
    v.prefill.push_back(r);
  }
  return v;
}

policy_snapshot scheduler_core::snapshot(const snapshot_views& v, double now_s) const {
  policy_snapshot s{v.waiting, v.running, now_s};
  s.tenants = tenants_;
  s.step_time = step_time_.model();
  s.max_batched_tokens = cfg_.max_batched_tokens;
  return s;
}

// ---- results ------------------------------------------------------------------------------

void scheduler_core::complete(const step& st, const step_result& r, double now_s,
                              std::vector<request_event>& events) {
  if (r.compute_ms > 0)
    step_time_.add(st.n_tokens(), static_cast<uint32_t>(st.seqs.size()), st.attention_kpairs(), r.compute_ms);
  for (size_t i = 0; i < st.seqs.size(); ++i) {
    const step_seq& e = st.seqs[i];
    sequence* s = find(e.id);
    if (!s) continue;  // ended while the step ran (engine drain)
    s->busy = false;
    if (s->cancelled) {
      finish(*s, event_kind::cancelled, finish_reason::none, reject_reason::none, "cancelled", now_s, events);
      continue;
    }
    const auto n = static_cast<uint32_t>(e.tokens.size());
    s->computed += n;
    const bool decode = e.decode();
    (decode ? decode_tokens_ : prefill_tokens_) += n;
    if (!tenants_.empty()) service_.charge(s->tenant, decode ? 0 : n, e.sample ? 1 : 0);
    if (!(copy_handoff_ && st.kind == step_kind::decode)) offer_full_blocks(*s);
    if (e.sample) accept_token(*s, i < r.sampled.size() ? r.sampled[i] : no_token, now_s, events);
  }
}

void scheduler_core::offer_full_blocks(sequence& s) {
  const uint32_t bs = kv_.block_size();
  for (; s.n_keyed < s.computed / bs; ++s.n_keyed) {
    const auto chunk = std::span(s.tokens).subspan(size_t{s.n_keyed} * bs, bs);
    s.last_key = kv_.offer(s.blocks[s.n_keyed], s.last_key, s.salt, chunk);
  }
}

void scheduler_core::accept_token(sequence& s, token_id t, double now_s, std::vector<request_event>& events) {
  if (t == no_token) {
    finish(s, event_kind::error, finish_reason::none, reject_reason::internal, "the worker drew no token",
           now_s, events);
    return;
  }
  ++s.draws;
  if (s.first_token_s < 0) s.first_token_s = now_s;
  if (s.last_token_s >= 0) count_gap(s, now_s);
  s.last_token_s = now_s;
  s.token_ms.push_back(static_cast<float>(1e3 * (now_s - s.arrival_s)));
  if (tok_->is_end_of_generation(t)) {
    finish(s, event_kind::done, finish_reason::eos, reject_reason::none, {}, now_s, events);
    return;
  }
  s.tokens.push_back(t);
  request_event ev;
  ev.id = s.id;
  ev.kind = event_kind::token;
  ev.token = t;
  ev.index = s.generated() - 1;
  ev.text = s.stop.push(s.decoder.push(t));
  events.push_back(std::move(ev));
  if (s.stop.stopped()) {
    finish(s, event_kind::done, finish_reason::stop, reject_reason::none, {}, now_s, events);
  } else if (s.generated() >= s.req.max_tokens || s.tokens.size() >= n_ctx_) {
    finish(s, event_kind::done, finish_reason::length, reject_reason::none, {}, now_s, events);
  }
}

// What an SLO-aware policy needs to spend a stream's ITL quantile: its gaps, and those missed.
void scheduler_core::count_gap(sequence& s, double now_s) {
  ++s.itl_gaps;
  const double target_ms = tenants_.empty() ? 0 : tenants_[s.tenant].itl_ms;
  if (target_ms > 0 && 1e3 * (now_s - s.last_token_s) > target_ms) ++s.itl_misses;
}

void scheduler_core::finish(sequence& s, event_kind kind, finish_reason fin, reject_reason why,
                            std::string message, double now_s, std::vector<request_event>& events) {
  request_event ev;
  ev.id = s.id;
  ev.kind = kind;
  ev.finish = fin;
  ev.reason = why;
  ev.message = std::move(message);
  if (kind == event_kind::done && fin != finish_reason::stop) {
    ev.text = s.stop.push(s.decoder.flush());
    if (!s.stop.stopped()) ev.text += s.stop.flush();
  }
  // What the client received: an end-of-generation token is drawn (s.draws counts it) but
  // never streamed.
  ev.use = {s.n_prompt, s.generated(), s.cached_tokens};
  ev.preemptions = s.preemptions;
  now_s = std::max(now_s, s.arrival_s);
  const auto ms = [&](double t) { return 1e3 * ((t < 0 ? now_s : t) - s.arrival_s); };
  ev.time.queue_ms = ms(s.first_step_s);
  ev.time.ttft_ms = s.first_token_s < 0 ? 0 : ms(s.first_token_s);
  if (s.first_token_s >= 0) {
    ev.time.prefill_ms = 1e3 * (s.sample_step_s - s.first_step_s);
    ev.time.first_step_ms = 1e3 * (s.first_token_s - s.sample_step_s);
  }
  ev.time.mean_itl_ms = s.draws > 1 ? 1e3 * (s.last_token_s - s.first_token_s) / (s.draws - 1) : 0;
  ev.time.e2e_ms = ms(now_s);
  records_.push_back({s.id, s.req.tenant, kind, fin, why, ev.use, ev.time, s.preemptions, s.arrival_s,
                      std::move(s.token_ms)});
  if (!s.started_once) dequeued_.push_back(s.id);
  events.push_back(std::move(ev));
  kv_.release(s.blocks);
  if (s.running) {
    erase_one(running_, &s);
  } else {
    leave_waiting(s);
  }
  seqs_.erase(s.id);
}

void scheduler_core::abort(const step& st, const std::string& why, double now_s,
                           std::vector<request_event>& events) {
  for (const step_seq& e : st.seqs) {
    if (sequence* s = find(e.id)) {
      finish(*s, event_kind::error, finish_reason::none, reject_reason::internal, why, now_s, events);
    }
  }
}

void scheduler_core::drain(reject_reason reason, const std::string& why, double now_s,
                           std::vector<request_event>& events) {
  std::vector<sequence*> all;
  for (auto& [id, s] : seqs_) all.push_back(s.get());
  std::ranges::sort(all, {}, &sequence::id);
  for (sequence* s : all) finish(*s, event_kind::error, finish_reason::none, reason, why, now_s, events);
}

void scheduler_core::hand_over(request_id id, scheduler_core& to, double now_s,
                               std::vector<request_event>& events) {
  sequence* s = find(id);
  if (!s) return;
  s->busy = false;
  if (s->cancelled) {
    finish(*s, event_kind::cancelled, finish_reason::none, reject_reason::none, "cancelled", now_s, events);
    return;
  }
  kv_.release(s->blocks);
  s->blocks.clear();
  s->computed = 0;
  s->n_keyed = 0;
  s->last_key = kv_cache::root_key;
  if (s->running) {
    erase_one(running_, s);
    s->running = false;
  } else {
    leave_waiting(*s);
  }
  auto node = seqs_.extract(id);
  sequence& moved = *node.mapped();
  moved.tenant = to.slot_of(moved.req.tenant);
  auto pos =
      std::ranges::find_if(to.waiting_, [&](const sequence* w) { return w->arrival_s > moved.arrival_s; });
  to.enter_waiting(moved, pos);
  to.seqs_.insert(std::move(node));
}

std::vector<request_id> scheduler_core::ids() const {
  std::vector<request_id> out;
  out.reserve(seqs_.size());
  for (const auto& [id, s] : seqs_) out.push_back(id);
  std::ranges::sort(out);
  return out;
}

scheduler_core::outstanding scheduler_core::load() const {
  outstanding o;
  for (const auto& [id, s] : seqs_) {
    o.prefill_tokens += s->tokens.size() - std::min<size_t>(s->computed, s->tokens.size());
    o.decode_tokens += s->req.max_tokens - std::min(s->req.max_tokens, s->generated());
    ++o.sequences;
  }
  return o;
}

uint32_t scheduler_core::cached_tokens(const request& r, request_id id) const {
  if (r.prompt.empty()) return 0;
  const uint32_t bs = kv_.block_size();
  const auto max_blocks = static_cast<uint32_t>((r.prompt.size() - 1) / bs);  // as start() matches
  return kv_.cached_prefix(r.prompt, salt_of(r, id), max_blocks) * bs;
}

std::vector<request_record> scheduler_core::take_records() {
  return std::exchange(records_, {});
}

std::vector<request_id> scheduler_core::take_dequeued() {
  return std::exchange(dequeued_, {});
}

scheduler_gauges scheduler_core::gauges() const {
  scheduler_gauges g{static_cast<uint32_t>(waiting_.size()),
                     static_cast<uint32_t>(running_.size()),
                     preemptions_,
                     steps_,
                     prefill_tokens_,
                     decode_tokens_,
                     kv_.stats()};
  // A household has a handful of tenants: a linear search beats a map here.
  auto load_of = [&](const std::string& name) -> tenant_load& {
    for (tenant_load& t : g.tenants)
      if (t.tenant == name) return t;
    return g.tenants.emplace_back(tenant_load{name});
  };
  for (const sequence* s : waiting_) ++load_of(s->req.tenant).waiting;
  for (const sequence* s : running_) ++load_of(s->req.tenant).running;
  return g;
}

}  // namespace hearth
