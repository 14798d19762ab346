#include "server/job_thread.hpp"

namespace hearth::server {

job_thread::job_thread() : thread_([this] { run(); }) {}

job_thread::~job_thread() {
  finish();
}

void job_thread::post(std::function<void()> job) {
  {
    std::lock_guard lock(m_);
    if (finishing_) return;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void job_thread::finish() {
  {
    std::lock_guard lock(m_);
    finishing_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void job_thread::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(m_);
      wake_.wait(lock, [this] { return finishing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace hearth::server
