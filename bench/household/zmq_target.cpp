#include "bench/household/zmq_target.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

namespace hearth::household {

namespace {

using json = nlohmann::json;

// The I/O thread sleeps until a message or a request comes (submit() writes to an eventfd it
// waits on beside the socket), or this long. It had woken every millisecond to look for requests:
// on two cores those wakes took time from the steps it measures (AMD EPYC Zen 5, `small` bf16,
// the mix at its own rate: 1.1 s of CPU in 55 s, most of it in the kernel).
constexpr std::chrono::milliseconds idle_wait{100};

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
  return failed_outcome(r.error().code, r.error().message, accepted);
}

// The server's stats are read with client::field: a missing or mistyped figure reads as 0.
dist_summary dist_of(const json& j) {
  auto number = [&](const char* key) { return client::field<double>(j, key).value_or(0); };
  const uint64_t count = client::field<uint64_t>(j, "count").value_or(0);
  return {count, number("mean"), number("p50"), number("p90"), number("p99"), number("max")};
}

uint32_t count_of(const json& j, const char* key) {
  return client::field<uint32_t>(j, key).value_or(0);
}

}  // namespace

struct zmq_target::impl {
  std::unique_ptr<client::client> io, gauge;
  bool name_tenants = true;
  std::mutex mu;  // guards queue
  std::vector<pending> queue;
  std::mutex gauge_mu;  // the gauge client moves between the sampler and the main thread
  std::atomic<bool> stop{false};
  int wake = -1;  // eventfd: a request queued, or stop
  std::thread thread;

  void signal() const {
    const uint64_t one = 1;
    (void)!write(wake, &one, sizeof one);  // only fails when the count would overflow: woken anyway
  }

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
        if (!s)
          p.sink->on_end(p.index, outcome_of(s.error(), false));
        else
          streams.push_back({p.index, std::move(p.sink), std::move(*s)});
      }
      io->wait(idle_wait, wake);
      uint64_t signals = 0;
      (void)!read(wake, &signals, sizeof signals);  // non-blocking: drains it, or nothing to drain
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
  impl_->signal();
  impl_->thread.join();
  close(impl_->wake);
}

result<std::unique_ptr<zmq_target>> zmq_target::connect(const client::options& opt) {
  auto p = std::make_unique<impl>();
  for (auto* c : {&p->io, &p->gauge}) {
    auto connected = client::client::connect(opt);
    if (!connected) return error{errc::io, connected.error().code + ": " + connected.error().message};
    *c = std::move(*connected);
  }
  p->name_tenants = opt.server_key.empty();
  p->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (p->wake < 0) {
    const int e = errno;
    return error{errc::io, std::string("bench target: eventfd: ") + std::strerror(e)};
  }
  return std::unique_ptr<zmq_target>(new zmq_target(std::move(p)));
}

void zmq_target::submit(const bench_request& r, std::shared_ptr<bench_sink> sink) {
  // Greedy: the same tokens in every run.
  // ignore_eos: every request runs to its max_tokens, so a random end of generation on a
  // generated model never shortens the mix.
  client::generate_params p{
      .prompt = r.prompt, .max_tokens = r.max_tokens, .temperature = 0, .stream = true, .ignore_eos = true};
  if (impl_->name_tenants) p.tenant = r.tenant;
  {
    std::lock_guard lock(impl_->mu);
    impl_->queue.push_back({r.index, std::move(p), std::move(sink)});
  }
  impl_->signal();
}

target_gauges zmq_target::gauges() {
  std::lock_guard lock(impl_->gauge_mu);
  const auto s = impl_->gauge->stats();
  if (!s) return {};  // a missed sample reads as an idle server; the next one corrects it
  const json& e = client::object_field(*s, "engine");
  return {count_of(e, "waiting"), count_of(e, "running"), count_of(e, "kv_blocks_used"),
          count_of(e, "kv_blocks_total")};
}

server_figures zmq_target::figures() {
  std::lock_guard lock(impl_->gauge_mu);
  const auto s = impl_->gauge->stats();
  server_figures f;
  if (!s) return f;
  const json& e = client::object_field(*s, "engine");
  f.preemptions = client::field<uint64_t>(e, "preemptions").value_or(0);
  f.policy = client::field<std::string>(e, "policy").value_or("");
  if (e.contains("per_step")) {  // a server before per_step and limits: only the counts
    const json& st = client::object_field(e, "per_step");
    f.has_steps = true;
    f.steps = client::field<uint64_t>(e, "steps").value_or(0);
    f.seqs = dist_of(client::object_field(st, "seqs"));
    f.prefill_tokens = dist_of(client::object_field(st, "prefill_tokens"));
    f.decode_tokens = dist_of(client::object_field(st, "decode_tokens"));
    f.step_ms = dist_of(client::object_field(st, "step_ms"));
  }
  const json& l = client::object_field(e, "limits");
  f.max_seqs = count_of(l, "max_seqs");
  f.max_batched_tokens = count_of(l, "max_batched_tokens");
  f.long_prefill_threshold = count_of(l, "long_prefill_threshold");
  f.mode = client::field<std::string>(l, "mode").value_or("");
  return f;
}

}  // namespace hearth::household
