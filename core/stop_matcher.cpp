#include "core/stop_matcher.hpp"

#include <algorithm>
#include <utility>

namespace hearth {

stop_matcher::stop_matcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

std::string stop_matcher::push(std::string_view text) {
  if (stopped_) return {};
  pending_ += text;
  size_t first = std::string::npos;
  for (const auto& s : stops_) first = std::min(first, pending_.find(s));
  if (first != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Every match lies wholly inside pending_: whatever could begin one is never shown early.
  const size_t keep = held_suffix();
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string stop_matcher::flush() {
  return std::exchange(pending_, {});
}

// The longest suffix of pending_ that is a proper prefix of some stop string.
size_t stop_matcher::held_suffix() const {
  size_t best = 0;
  for (const auto& s : stops_) {
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > best; --n) {
      if (std::string_view(pending_).substr(pending_.size() - n) == std::string_view(s).substr(0, n)) {
        best = n;
        break;
      }
    }
  }
  return best;
}

}  // namespace hearth
