#pragma once
// Engine events to the HTTP threads. The gateway's one event sink hands every event to the hub,
// which puts it in the channel of its request; the thread serving that request (cpp-httplib's
// connection thread) waits on its channel alone. One lock for the table, one per channel: a
// burst of tokens for one stream wakes that stream's thread once.

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/request.hpp"

namespace hearth::http {

//! One request's events, in order, from the sink to the thread that writes its reply.
class event_channel {
 public:
  void push(request_event e);
  //! Every event there, waiting up to `timeout` for the first; empty when none came.
  std::vector<request_event> take(std::chrono::milliseconds timeout);

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<request_event> events_;
};

class event_hub {
 public:
  //! The channel for `id`, from before it is submitted until its terminal event (or close).
  std::shared_ptr<event_channel> open(request_id id);
  //! Forgets `id` (its client left); later events for it are dropped.
  void close(request_id id);
  //! From the sink: to the request's channel; a terminal event closes it.
  void deliver(request_event e);
  //! Ends every open request here with a terminal error event of `reason` (the engine failed,
  //! or the server stops): returns their ids, to be cancelled in the engine if it still runs.
  std::vector<request_id> end_all(reject_reason reason, const std::string& message);
  size_t size() const;

 private:
  mutable std::mutex m_;
  std::unordered_map<request_id, std::shared_ptr<event_channel>> open_;
};

}  // namespace hearth::http
