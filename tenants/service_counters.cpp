#include "tenants/service_counters.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace hearth {

service_counters::service_counters(std::vector<double> weights, vtc_cost cost)
    : weights_(std::move(weights)), cost_(cost), counters_(weights_.size(), 0.0), waiting_(weights_.size(), 0) {
  assert(std::ranges::all_of(weights_, [](double w) { return w > 0; }) && "service_counters: weights must be > 0");
}

void service_counters::enqueue(uint32_t t) {
  assert(t < waiting_.size() && "service_counters: unknown tenant");
  if (waiting_[t]++ == 0) lift(t);
}

void service_counters::dequeue(uint32_t t) {
  assert(t < waiting_.size() && waiting_[t] > 0 && "service_counters: dequeue without a waiting request");
  if (--waiting_[t] == 0) last_left_ = t;
}

void service_counters::charge(uint32_t t, uint64_t input_tokens, uint64_t output_tokens) {
  assert(t < counters_.size() && "service_counters: unknown tenant");
  const double cost = cost_.input * static_cast<double>(input_tokens) + cost_.output * static_cast<double>(output_tokens);
  counters_[t] += cost / weights_[t];
}

void service_counters::lift(uint32_t t) {
  double floor = std::numeric_limits<double>::infinity();
  for (uint32_t u = 0; u < counters_.size(); ++u)
    if (u != t && waiting_[u] > 0) floor = std::min(floor, counters_[u]);
  if (floor == std::numeric_limits<double>::infinity()) {
    if (!last_left_) return;
    floor = counters_[*last_left_];
  }
  counters_[t] = std::max(counters_[t], floor);
}

}  // namespace hearth
