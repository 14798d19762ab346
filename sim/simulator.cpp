#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "bench/household/distributions.hpp"

#include "core/admission_core.hpp"
#include "core/step_lanes.hpp"

namespace hearth::sim {

using household::bench_record;
using household::bench_request;

namespace {

constexpr double gauge_period_s = 0.25;  // as the real bench samples its server

// What happens next on the virtual clock: a request arrives, or a lane's step completes. Ties
// go in the order they were scheduled, so a run is the same every time.
struct event {
  double t = 0;
  uint64_t order = 0;
  bool arrival = false;
  size_t index = 0;  // the request's, or the lane's

  bool operator>(const event& o) const { return t != o.t ? t > o.t : order > o.order; }
};

class simulation {
 public:
  simulation(const sim_engine& e, const std::vector<bench_request>& requests,
             const std::vector<uint32_t>& cls)
      : e_(e),
        requests_(requests),
        admission_({e.n_ctx, e.n_vocab, uint64_t{e.n_blocks} * e.block_size, e.cfg.max_waiting,
                    e.cfg.max_waiting_tokens},
                   e.cfg.tenants, 0.0),
        core_(e.cfg, *e.tok, e.n_ctx, e.n_blocks, e.block_size, make_policy(e.cfg.policy)),
        lanes_(e.cfg.mode) {
    filler_ = filler_token(*e.tok);
    out_.records.resize(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      bench_record& r = out_.records[i];
      r.index = i;
      r.cls = cls[i];
      r.arrival_s = requests[i].at_s;
      r.prompt_tokens = static_cast<uint32_t>(requests[i].prompt_tokens.size());
      r.max_tokens = requests[i].max_tokens;
      push(requests[i].at_s, true, i);
    }
  }

  household::run_result run(double drain_s) {
    const double deadline = (requests_.empty() ? 0.0 : requests_.back().at_s) + drain_s;
    double now = 0;
    while (!queue_.empty() && queue_.top().t <= deadline) {
      const event ev = queue_.top();
      queue_.pop();
      sample_gauges_until(ev.t);
      now = ev.t;
      if (ev.arrival)
        arrive(ev.index, now);
      else
        complete(ev.index, now);
      start_steps(now);
    }
    out_.duration_s = queue_.empty() ? now : deadline;
    figures();
    return std::move(out_);
  }

 private:
  // Every completion is this one token: a word of the vocabulary, never an end of generation
  // (the bench's requests ignore EOS and run to their max_tokens, as they do on the real engine).
  static token_id filler_token(const tokenizer& tok) {
    const auto ids = tok.encode(" the", {.add_bos = false, .parse_special = false});
    return ids.empty() ? 0 : ids.back();
  }

  const step_profile& profile_of(size_t lane) const {
    return lanes_.kind(lane) == step_kind::decode && e_.decode_profile ? *e_.decode_profile : e_.profile;
  }

  void push(double t, bool arrival, size_t index) { queue_.push({t, next_order_++, arrival, index}); }

  void arrive(size_t i, double now) {
    request r = household::engine_request_of(requests_[i], e_.cfg.tenants);
    bench_record& rec = out_.records[i];
    rec.sent_s = now;
    const request_id id = i + 1;
    if (auto no = admission_.admit(id, r, now)) {
      rec.kind = event_kind::rejected;
      rec.reason = no->reason;
      rec.end_s = now + e_.profile.path_for(rec.prompt_tokens) / 1e3;
      return;
    }
    core_.add(id, std::move(r), now);
  }

  void start_steps(double now) {
    for (size_t lane : lanes_.start(core_, now)) {
      const step& s = *lanes_.in_flight(lane);
      if (e_.on_step) e_.on_step(now, s);
      const step_profile& p = profile_of(lane);
      profile_point shape = shape_of(s);
      shape.idle_ms = (now - lane_free_since_[lane]) * 1e3;
      // Around the prediction, mean-preserving lognormal: what a machine's steps do run to run.
      const double ms =
          p.predict_ms(shape) * std::exp(p.noise * household::draw_normal(noise_) - p.noise * p.noise / 2);
      lane_ms_[lane] = ms - p.overhead_ms;
      push(now + ms / 1e3, false, lane);
      step_ms_.push_back(ms);
      seqs_.push_back(static_cast<double>(s.seqs.size()));
      decode_.push_back(s.n_tokens_decode());
      prefill_.push_back(s.n_tokens() - s.n_tokens_decode());
    }
  }

  void complete(size_t lane, double now) {
    const step& s = *lanes_.in_flight(lane);
    lane_free_since_[lane] = now;
    step_result r{.number = s.number, .sampled = {}, .compute_ms = 0, .error = {}};
    for (const step_seq& q : s.seqs) r.sampled.push_back(q.sample ? filler_ : no_token);
    // The step's backend time, as a worker reports it (what the SLO policy's step-time fit learns).
    r.compute_ms = lane_ms_[lane];
    std::vector<request_event> events;
    lanes_.finish(lane, r, core_, now, events);
    for (request_id id : core_.take_dequeued()) admission_.dequeued(id);
    for (const request_record& rec : core_.take_records())
      admission_.finished(rec.id, rec.use.completion_tokens, now);
    for (const request_event& ev : events) record(ev, now);
  }

  // At the client: the server's time plus the request's way in and out (step_profile::path_ms).
  void record(const request_event& ev, double now) {
    bench_record& r = out_.records[ev.id - 1];
    const double seen = now + e_.profile.path_for(r.prompt_tokens) / 1e3;
    if (ev.kind == event_kind::token)
      r.token_s.push_back(seen);
    else if (ev.terminal())
      household::record_end(r, seen, {ev.kind, ev.reason, ev.message, ev.use, ev.time, ev.preemptions});
  }

  void sample_gauges_until(double t) {
    for (; next_gauge_s_ < t; next_gauge_s_ += gauge_period_s) {
      const scheduler_gauges g = core_.gauges();
      out_.gauges.push_back({next_gauge_s_, {g.waiting, g.running, g.kv.used, g.kv.n_blocks}});
    }
  }

  void figures() {
    household::server_figures& f = out_.server;
    const scheduler_gauges g = core_.gauges();
    f.has_steps = true;
    f.steps = g.steps;
    f.preemptions = g.preemptions;
    f.seqs = household::summarize(seqs_);
    f.prefill_tokens = household::summarize(prefill_);
    f.decode_tokens = household::summarize(decode_);
    f.step_ms = household::summarize(step_ms_);
    f.max_seqs = e_.cfg.max_seqs;
    f.max_batched_tokens = e_.cfg.max_batched_tokens;
    f.long_prefill_threshold = e_.cfg.long_prefill_threshold;
    f.policy = e_.cfg.policy;
    f.mode = to_string(e_.cfg.mode);
  }

  const sim_engine& e_;
  const std::vector<bench_request>& requests_;
  admission_core admission_;
  scheduler_core core_;
  step_lanes lanes_;
  token_id filler_ = 0;
  rng noise_{e_.seed};
  std::vector<double> lane_ms_ = std::vector<double>(2, 0.0);  // each lane's step in flight, backend time
  // When each lane's last step completed: the idle time before its next (the first follows the
  // idle server's start, as a served run's does).
  std::vector<double> lane_free_since_ = std::vector<double>(2, -1e9);
  std::priority_queue<event, std::vector<event>, std::greater<>> queue_;
  uint64_t next_order_ = 0;
  double next_gauge_s_ = 0;
  std::vector<double> step_ms_, seqs_, decode_, prefill_;  // per step, for the server's figures
  household::run_result out_;
};

}  // namespace

household::run_result simulate(const sim_engine& e, const std::vector<bench_request>& requests,
                               const std::vector<uint32_t>& cls, double drain_s) {
  return simulation(e, requests, cls).run(drain_s);
}

}  // namespace hearth::sim
