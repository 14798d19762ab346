#include "bench/household/zmq_target.hpp"

#include <atomic>
#include <list>
#include <mutex>
#include <thread>

namespace hearth::household {

namespace {

using json = nlohmann::json;

// How long the I/O thread waits for messages before it looks for new requests: arrivals are
// sent within about this much of their time.
constexpr std::chrono::milliseconds poll_interval{1};

struct pending {
  size_t index;
  client::generate_params params;
  std::shared_ptr<bench_sink> sink;
};

struct live {
  size_t index;
  std::shared_ptr<bench_sink> sink;
  client::stream s;
};

reject_reason reason_of(const std::string& code) {
  for (auto r = static_cast<uint8_t>(reject_reason::bad_request); r <= static_cast<uint8_t>(reject_reason::internal); ++r)
    if (code == to_string(static_cast<reject_reason>(r))) return static_cast<reject_reason>(r);
  return reject_reason::none;  // the client's own (timeout, transport, protocol) or unauthorized
}

// The wire's terminal message as target.hpp's outcome: an error before `accepted` is a refusal.
bench_outcome outcome_of(const client::outcome<client::completion>& r, bool accepted) {
  if (r) {
    const client::completion& d = *r;
    return {event_kind::done,
            reject_reason::none,
            {},
            {d.prompt_tokens, d.completion_tokens, d.cached_tokens},
            {d.queue_ms, d.ttft_ms, d.prefill_ms, d.first_step_ms, d.mean_itl_ms, d.e2e_ms},
            d.preemptions};
  }
  const client::error& e = r.error();
  const event_kind kind = e.code == "cancelled" ? event_kind::cancelled
                          : accepted            ? event_kind::error
                                                : event_kind::rejected;
  return {kind, reason_of(e.code), e.code + ": " + e.message};
}

dist_summary dist_of(const json& j) {
  return {j.value("count", uint64_t{0}), j.value("mean", 0.0), j.value("p50", 0.0),
          j.value("p90", 0.0),           j.value("p99", 0.0),  j.value("max", 0.0)};
}

}  // namespace

struct zmq_target::impl {
  std::unique_ptr<client::client> io, gauge;
  bool name_tenants = true;
  std::mutex mu;  // guards queue
  std::vector<pending> queue;
  std::mutex gauge_mu;  // the gauge client moves between the sampler and the main thread
  std::atomic<bool> stop{false};
  std::thread thread;

  void run() {
    std::list<live> streams;  // destroyed with the thread: the ones still open are cancelled
    while (!stop) {
      std::vector<pending> fresh;
      {
        std::lock_guard lock(mu);
        fresh.swap(queue);
      }
      for (pending& p : fresh) {
        auto s = io->start(p.params);
        if (!s) p.sink->on_end(p.index, outcome_of(s.error(), false));
        else streams.push_back({p.index, std::move(p.sink), std::move(*s)});
      }
      io->wait(poll_interval);
      for (auto it = streams.begin(); it != streams.end();) {
        while (!it->s.ended() && it->s.ready())
          if (it->s.next()) it->sink->on_token(it->index);
        if (!it->s.ended()) {
          ++it;
          continue;
        }
        it->sink->on_end(it->index, outcome_of(it->s.result(), it->s.accepted()));
        it = streams.erase(it);
      }
    }
  }
};

zmq_target::zmq_target(std::unique_ptr<impl> p) : impl_(std::move(p)) {
  impl_->thread = std::thread([i = impl_.get()] { i->run(); });
}

zmq_target::~zmq_target() {
  impl_->stop = true;
  impl_->thread.join();
}

result<std::unique_ptr<zmq_target>> zmq_target::connect(const client::options& opt) {
  auto p = std::make_unique<impl>();
  for (auto* c : {&p->io, &p->gauge}) {
    auto connected = client::client::connect(opt);
    if (!connected) return error{errc::io, connected.error().code + ": " + connected.error().message};
    *c = std::move(*connected);
  }
  p->name_tenants = opt.server_key.empty();
  return std::unique_ptr<zmq_target>(new zmq_target(std::move(p)));
}

void zmq_target::submit(const bench_request& r, std::shared_ptr<bench_sink> sink) {
  // Greedy: the same tokens in every run.
  client::generate_params p{.prompt = r.prompt, .max_tokens = r.max_tokens, .temperature = 0, .stream = true};
  if (impl_->name_tenants) p.tenant = r.tenant;
  std::lock_guard lock(impl_->mu);
  impl_->queue.push_back({r.index, std::move(p), std::move(sink)});
}

target_gauges zmq_target::gauges() {
  std::lock_guard lock(impl_->gauge_mu);
  const auto s = impl_->gauge->stats();
  if (!s) return {};  // a missed sample reads as an idle server; the next one corrects it
  const json& e = (*s)["engine"];
  return {e.value("waiting", 0u), e.value("running", 0u), e.value("kv_blocks_used", 0u),
          e.value("kv_blocks_total", 0u)};
}

server_figures zmq_target::figures() {
  std::lock_guard lock(impl_->gauge_mu);
  const auto s = impl_->gauge->stats();
  server_figures f;
  if (!s) return f;
  const json& e = (*s)["engine"];
  f.preemptions = e.value("preemptions", uint64_t{0});
  f.policy = e.value("policy", std::string());
  if (e.contains("per_step")) {  // a server before per_step and limits: only the counts
    const json& st = e["per_step"];
    f.has_steps = true;
    f.steps = e.value("steps", uint64_t{0});
    f.seqs = dist_of(st.value("seqs", json::object()));
    f.prefill_tokens = dist_of(st.value("prefill_tokens", json::object()));
    f.decode_tokens = dist_of(st.value("decode_tokens", json::object()));
    f.step_ms = dist_of(st.value("step_ms", json::object()));
  }
  const json& l = e.value("limits", json::object());
  f.max_seqs = l.value("max_seqs", 0u);
  f.max_batched_tokens = l.value("max_batched_tokens", 0u);
  f.long_prefill_threshold = l.value("long_prefill_threshold", 0u);
  f.mode = l.value("mode", std::string());
  return f;
}

}  // namespace hearth::household
