#include "tenants/token_bucket.hpp"

#include <algorithm>
#include <cmath>

namespace hearth {

namespace {

// Refills are sums of products of doubles: a take at exactly the moment retry_after_ms names
// must not fail by a rounding error, so levels this close to the need count as enough.
constexpr double rounding_slack = 1e-6;

}  // namespace

token_bucket::token_bucket(uint64_t tokens_per_minute, double now_s)
    : capacity_(static_cast<double>(tokens_per_minute)),
      rate_(capacity_ / 60.0),
      level_(capacity_),
      last_s_(now_s) {}

double token_bucket::level(double now_s) const {
  // A clock that steps back refills nothing rather than draining the bucket.
  return std::min(capacity_, level_ + std::max(0.0, now_s - last_s_) * rate_);
}

double token_bucket::needed(uint64_t n) const {
  return std::min(static_cast<double>(n), capacity_);
}

bool token_bucket::try_take(uint64_t n, double now_s) {
  if (capacity_ == 0) return true;
  const double now_level = level(now_s);
  if (now_level + rounding_slack < needed(n)) return false;
  level_ = now_level - static_cast<double>(n);
  last_s_ = std::max(last_s_, now_s);
  return true;
}

void token_bucket::give_back(uint64_t n, double now_s) {
  if (capacity_ == 0) return;
  level_ = std::min(capacity_, level(now_s) + static_cast<double>(n));
  last_s_ = std::max(last_s_, now_s);
}

void token_bucket::set_rate(uint64_t tokens_per_minute, double now_s) {
  const double was = capacity_ == 0 ? static_cast<double>(tokens_per_minute) : level(now_s);
  capacity_ = static_cast<double>(tokens_per_minute);
  rate_ = capacity_ / 60.0;
  level_ = std::min(capacity_, was);
  last_s_ = std::max(last_s_, now_s);
}

uint64_t token_bucket::retry_after_ms(uint64_t n, double now_s) const {
  if (capacity_ == 0) return 0;
  const double missing = needed(n) - level(now_s);
  if (missing <= rounding_slack) return 0;
  return static_cast<uint64_t>(std::ceil(missing / rate_ * 1000.0));
}

}  // namespace hearth
