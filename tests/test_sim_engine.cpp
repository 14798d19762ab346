// The simulator decides with the engine's own code: on the same arrivals, the real engine (its
// actors, over a backend whose steps take a fixed time) and the simulator (over a profile of
// that time) plan the same steps. A scheduler forked for the simulator would drift from this.
#include <catch2/catch.hpp>

#include <mutex>
#include <thread>

#include "actors/engine.hpp"
#include "actors/event_queue.hpp"
#include "engine_fixture.hpp"
#include "sim/simulator.hpp"

namespace hearth::test {
namespace {

// Each step's shape: its sequences and their new tokens, in batch order.
using step_shape = std::vector<size_t>;

// The fixture's backend, each forward taking `delay` and telling its batch's shape.
class recording_backend final : public backend {
 public:
  recording_backend(std::unique_ptr<backend> inner, std::chrono::milliseconds delay,
                    std::function<void(step_shape)> tell)
      : inner_(std::move(inner)), delay_(delay), tell_(std::move(tell)) {}
  const hparams& params() const override { return inner_->params(); }
  kv_store& kv() override { return inner_->kv(); }
  status<> forward(std::span<const batch_seq> batch, batch_logits& out) override {
    step_shape shape;
    for (const batch_seq& s : batch) shape.push_back(s.tokens.size());
    tell_(std::move(shape));
    std::this_thread::sleep_for(delay_);
    return inner_->forward(batch, out);
  }
  result<std::unique_ptr<backend>> share() override { return error{errc::unsupported, "not shared"}; }

 private:
  std::unique_ptr<backend> inner_;
  std::chrono::milliseconds delay_;
  std::function<void(step_shape)> tell_;
};

}  // namespace

TEST_CASE("the real engine and the simulator plan the same steps for the same arrivals", "[sim][engine]") {
  const auto m = engine_model::make();
  engine_config cfg;
  cfg.policy = "fcfs";  // decides by arrival alone: the plans must not depend on measured times
  cfg.max_batched_tokens = 48;
  cfg.max_seqs = 8;
  cfg.long_prefill_threshold = 32;
  cfg.threads_per_worker = 1;
  // Six prompts of 20 to 70 tokens, sent at once; the first step holds the first alone (it
  // starts as it arrives), and its 60 ms let the others queue behind it.
  std::vector<household::bench_request> requests;
  for (size_t i = 0; i < 6; ++i) {
    household::bench_request r;
    r.index = i;
    r.tenant = "default";
    for (size_t k = 0; k < 20 + 10 * i; ++k)
      r.prompt_tokens.push_back(static_cast<token_id>(5 + (i * 31 + k) % 300));
    r.max_tokens = static_cast<uint32_t>(3 + i);
    requests.push_back(r);
  }
  const uint64_t kv_tokens = 4096;

  std::mutex mu;
  std::vector<step_shape> real;
  auto e = engine::start(cfg, m->tok, [&]() -> result<std::unique_ptr<backend>> {
    return std::unique_ptr<backend>(std::make_unique<recording_backend>(
        m->backend(kv_tokens), std::chrono::milliseconds(60), [&](step_shape s) {
          std::lock_guard lock(mu);
          real.push_back(std::move(s));
        }));
  });
  if (!e) FAIL(e.error().message);
  event_queue events(**e);
  for (const auto& b : requests) (*e)->submit(household::engine_request_of(b, cfg.tenants), events.sink());
  for (size_t ended = 0; ended < requests.size();) {
    const auto ev = events.next(std::chrono::seconds(30));
    REQUIRE(ev);
    if (ev->terminal()) ++ended;
  }

  std::vector<step_shape> simulated;
  sim::step_profile p;
  p.base_ms = 60;
  p.bend_ms.assign(p.knots.size(), 0.0);
  sim::sim_engine se{.cfg = cfg,
                     .tok = m->tok.get(),
                     .n_ctx = (*e)->worker().n_ctx,
                     .n_vocab = (*e)->worker().n_vocab,
                     .n_blocks = (*e)->worker().n_blocks,
                     .block_size = (*e)->worker().block_size,
                     .profile = p,
                     .decode_profile = std::nullopt,
                     .on_step = [&](double, const step& s) {
                       step_shape shape;
                       for (const step_seq& q : s.seqs) shape.push_back(q.tokens.size());
                       simulated.push_back(shape);
                     }};
  const auto run = sim::simulate(se, requests, std::vector<uint32_t>(requests.size(), 0), 60);
  for (const auto& r : run.records) CHECK(r.kind == event_kind::done);
  std::lock_guard lock(mu);
  CHECK(real.size() > requests.size());
  CHECK(simulated == real);
}

}  // namespace hearth::test
