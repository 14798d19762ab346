#pragma once
// One thread that runs jobs in the order they come: the gateway tokenizes long prompts here
// (a 10 MB prompt took the gateway thread 1 s, and every other client's reply waited). One
// thread, not a pool: such prompts are rare, the cores belong to the engine's workers, and
// order keeps one client's requests in the order it sent them.

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace hearth::server {

class job_thread {
 public:
  job_thread();
  //! finish()
  ~job_thread();
  job_thread(const job_thread&) = delete;
  job_thread& operator=(const job_thread&) = delete;

  //! Queues `job`; dropped once finish() has begun.
  void post(std::function<void()> job);
  //! Runs what is queued, then ends the thread. Idempotent.
  void finish();

 private:
  void run();

  std::mutex m_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool finishing_ = false;
  std::thread thread_;
};

}  // namespace hearth::server
