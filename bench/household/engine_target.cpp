#include "bench/household/engine_target.hpp"

#include "actors/engine.hpp"
#include "actors/messages.hpp"
#include "bench/household/report.hpp"

namespace hearth::household {

namespace {

caf::behavior sink_actor(caf::event_based_actor* self, std::shared_ptr<bench_sink> sink, size_t index) {
  return {
      [=](request_event& e) {
        if (e.kind == event_kind::token) sink->on_token(index);
        if (!e.terminal()) return;
        sink->on_end(index, {e.kind, e.reason, std::move(e.message), e.use, e.time, e.preemptions});
        self->quit();
      },
  };
}

dist_summary from(const latency_summary& s) {
  return {s.count, s.mean, s.p50, s.p90, s.p99, s.max};
}

}  // namespace

struct engine_target::impl {
  engine_config cfg;
  std::unique_ptr<engine> e;
};

engine_target::engine_target(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
engine_target::~engine_target() = default;

result<std::unique_ptr<engine_target>> engine_target::start(engine_config cfg, const workload& w,
                                                            std::shared_ptr<const tokenizer> tok,
                                                            backend_factory make) {
  cfg.tenants.clear();
  for (const workload_class& c : w.classes) {
    cfg.tenants.push_back(
        {.name = c.name, .cls = c.priority, .weight = c.weight, .slo = {c.ttft_ms, c.itl_ms}});
  }
  auto e = engine::start(cfg, std::move(tok), std::move(make));
  if (!e) return e.error();
  return std::unique_ptr<engine_target>(
      new engine_target(std::make_unique<impl>(impl{std::move(cfg), std::move(*e)})));
}

void engine_target::submit(const bench_request& r, std::shared_ptr<bench_sink> sink) {
  request q;
  q.tenant = r.tenant;
  q.prompt = r.prompt_tokens;
  q.max_tokens = r.max_tokens;
  q.sampling.temperature = 0;  // greedy: the same tokens in every run
  impl_->e->submit(std::move(q), impl_->e->system().spawn(sink_actor, std::move(sink), r.index));
}

target_gauges engine_target::gauges() {
  const scheduler_gauges g = impl_->e->gauges();
  return {g.waiting, g.running, g.kv.used, g.kv.n_blocks};
}

server_figures engine_target::figures() {
  const metrics_snapshot m = impl_->e->metrics();
  const engine_config& c = impl_->cfg;
  server_figures f;
  f.has_steps = true;
  f.steps = m.gauges.steps;
  f.seqs = from(m.steps.seqs);
  f.prefill_tokens = from(m.steps.prefill_tokens);
  f.decode_tokens = from(m.steps.decode_tokens);
  f.step_ms = from(m.steps.step_ms);
  f.preemptions = m.gauges.preemptions;
  f.max_seqs = c.max_seqs;
  f.max_batched_tokens = c.max_batched_tokens;
  f.long_prefill_threshold = c.long_prefill_threshold;
  f.policy = c.policy;
  f.mode = mode_name(c.mode);
  return f;
}

}  // namespace hearth::household
