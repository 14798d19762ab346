#pragma once
// The gateway thread's inbox: engine events and tasks, from any thread. An eventfd, polled with
// the sockets, is written when the inbox goes from empty to non-empty, so a burst of tokens
// costs one wake-up.

#include <sys/eventfd.h>
#include <unistd.h>

#include <deque>
#include <functional>
#include <mutex>
#include <variant>

#include "core/request.hpp"

namespace hearth::server {

class inbox {
 public:
  using item = std::variant<request_event, std::function<void()>>;

  inbox() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~inbox() { ::close(fd_); }
  inbox(const inbox&) = delete;
  inbox& operator=(const inbox&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  void push(item x) {
    bool was_empty;
    {
      std::lock_guard lock(m_);
      was_empty = items_.empty();
      items_.push_back(std::move(x));
    }
    if (was_empty) {
      const uint64_t one = 1;
      [[maybe_unused]] auto n =
          ::write(fd_, &one, sizeof one);  // fails only if the counter is full: already awake
    }
  }

  std::deque<item> take() {
    uint64_t count;
    [[maybe_unused]] auto n = ::read(fd_, &count, sizeof count);  // EAGAIN when nothing was written
    std::lock_guard lock(m_);
    return std::exchange(items_, {});
  }

 private:
  int fd_;
  std::mutex m_;
  std::deque<item> items_;
};

}  // namespace hearth::server
