#include "server/http/event_hub.hpp"

namespace hearth::http {

void event_channel::push(request_event e) {
  {
    std::lock_guard lock(m_);
    events_.push_back(std::move(e));
  }
  cv_.notify_one();
}

std::vector<request_event> event_channel::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(m_);
  cv_.wait_for(lock, timeout, [this] { return !events_.empty(); });
  std::vector<request_event> out(std::make_move_iterator(events_.begin()),
                                 std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

std::shared_ptr<event_channel> event_hub::open(request_id id) {
  auto ch = std::make_shared<event_channel>();
  std::lock_guard lock(m_);
  open_[id] = ch;
  return ch;
}

void event_hub::close(request_id id) {
  std::lock_guard lock(m_);
  open_.erase(id);
}

void event_hub::deliver(request_event e) {
  std::shared_ptr<event_channel> ch;
  {
    std::lock_guard lock(m_);
    const auto it = open_.find(e.id);
    if (it == open_.end()) return;
    ch = it->second;
    if (e.terminal()) open_.erase(it);
  }
  ch->push(std::move(e));
}

std::vector<request_id> event_hub::end_all(reject_reason reason, const std::string& message) {
  std::unordered_map<request_id, std::shared_ptr<event_channel>> ended;
  {
    std::lock_guard lock(m_);
    ended.swap(open_);
  }
  std::vector<request_id> ids;
  for (auto& [id, ch] : ended) {
    request_event e;
    e.id = id;
    e.kind = event_kind::error;
    e.reason = reason;
    e.message = message;
    ch->push(std::move(e));
    ids.push_back(id);
  }
  return ids;
}

size_t event_hub::size() const {
  std::lock_guard lock(m_);
  return open_.size();
}

}  // namespace hearth::http
