#include "bench/household/runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace hearth::household {

namespace {

using clock_type = std::chrono::steady_clock;

// Every record of the run, written under one lock by the sender and the target's threads.
class recorder final : public bench_sink {
 public:
  recorder(const std::vector<bench_request>& requests, const std::vector<uint32_t>& cls,
           clock_type::time_point t0)
      : t0_(t0) {
    for (const bench_request& r : requests) {
      bench_record rec;
      rec.index = r.index;
      rec.cls = cls[r.index];
      rec.arrival_s = r.at_s;
      rec.prompt_tokens = static_cast<uint32_t>(r.prompt_tokens.size());
      rec.max_tokens = r.max_tokens;
      records_.push_back(std::move(rec));
    }
  }

  double now() const { return std::chrono::duration<double>(clock_type::now() - t0_).count(); }

  void on_sent(size_t index) {
    std::lock_guard lock(mu_);
    records_[index].sent_s = now();
  }

  void on_token(size_t index) override {
    const double t = now();
    std::lock_guard lock(mu_);
    if (!closed_) records_[index].token_s.push_back(t);
  }

  void on_end(size_t index, const bench_outcome& o) override {
    const double t = now();
    std::lock_guard lock(mu_);
    if (closed_) return;
    bench_record& r = records_[index];
    record_end(r, t, o);
    ++ended_;
    sum_e2e_s_ += t - r.arrival_s;
    last_end_s_ = t;
    ended_cv_.notify_all();
  }

  //! Waits until every request ended or `deadline_s` passed; true when all ended.
  bool wait_all(double deadline_s) {
    std::unique_lock lock(mu_);
    const auto deadline =
        t0_ + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(deadline_s));
    return ended_cv_.wait_until(lock, deadline, [&] { return ended_ == records_.size(); });
  }

  //! Stops recording (late events of unfinished requests are ignored) and hands the records over.
  std::vector<bench_record> close(double& last_end_s) {
    std::lock_guard lock(mu_);
    closed_ = true;
    last_end_s = last_end_s_;
    return records_;
  }

  size_t ended() {
    std::lock_guard lock(mu_);
    return ended_;
  }

  double mean_e2e_s() {
    std::lock_guard lock(mu_);
    return ended_ ? sum_e2e_s_ / static_cast<double>(ended_) : 0;
  }

 private:
  clock_type::time_point t0_;
  std::mutex mu_;
  std::condition_variable ended_cv_;
  std::vector<bench_record> records_;
  size_t ended_ = 0;
  double last_end_s_ = 0, sum_e2e_s_ = 0;
  bool closed_ = false;
};

// The ETA: the arrivals still to come, then about one request's time end to end for the last
// ones (the mean so far), never past the drain deadline.
void draw_progress(std::FILE* out, double now_s, double last_arrival_s, double deadline_s, size_t sent,
                   size_t ended, size_t total, double mean_e2e_s) {
  const double frac = total == 0 ? 1.0
                                 : 0.5 * std::min(1.0, now_s / std::max(last_arrival_s, 1e-9)) +
                                       0.5 * static_cast<double>(ended) / static_cast<double>(total);
  const int width = 30, filled = static_cast<int>(frac * width);
  const double eta = std::max(0.0, last_arrival_s - now_s) + (ended < total ? mean_e2e_s : 0.0);
  std::fprintf(out, "\r[%.*s%*s] %3.0f%%  %6.1f s  sent %zu/%zu  ended %zu  ETA %4.0f s ", filled,
               "##############################", width - filled, "", 100 * frac, now_s, sent, total, ended,
               std::max(0.0, std::min(eta, deadline_s - now_s)));
  std::fflush(out);
}

}  // namespace

run_result run_open_loop(bench_target& target, const std::vector<bench_request>& requests,
                         const std::vector<uint32_t>& cls, const run_options& opt) {
  const auto t0 = clock_type::now();
  const auto rec_ptr = std::make_shared<recorder>(requests, cls, t0);
  recorder& rec = *rec_ptr;
  const double last_arrival_s = requests.empty() ? 0 : requests.back().at_s;
  const double deadline_s = last_arrival_s + opt.drain_s;
  run_result out;
  std::atomic<size_t> sent{0};
  std::atomic<bool> stop{false};
  std::thread sampler([&] {
    const auto period =
        std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(opt.gauge_period_s));
    // A slow answer delays the next sample rather than bunching the ones after it. At least
    // one sample, however short the run.
    auto next = t0;
    do {
      std::this_thread::sleep_until(next);
      const target_gauges g = target.gauges();
      out.gauges.push_back({rec.now(), g});
      if (opt.progress)
        draw_progress(opt.progress, rec.now(), last_arrival_s, deadline_s, sent, rec.ended(), requests.size(),
                      rec.mean_e2e_s());
      next = std::max(next + period, clock_type::now());
    } while (!stop);
  });
  for (const bench_request& r : requests) {
    std::this_thread::sleep_until(
        t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(r.at_s)));
    out.max_send_lag_ms = std::max(out.max_send_lag_ms, 1e3 * (rec.now() - r.at_s));
    rec.on_sent(r.index);
    target.submit(r, rec_ptr);
    ++sent;
  }
  const bool all_ended = rec.wait_all(deadline_s);
  stop = true;
  sampler.join();
  if (opt.progress) std::fputs("\n", opt.progress);
  double last_end_s = 0;
  out.records = rec.close(last_end_s);
  out.duration_s = std::max(all_ended ? last_end_s : rec.now(), 1e-3);
  out.server = target.figures();
  return out;
}

}  // namespace hearth::household
