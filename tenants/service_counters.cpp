#include "tenants/service_counters.hpp"

#include <algorithm>
#include <cassert>

namespace hearth {

service_counters::service_counters(std::vector<double> weights, vtc_cost cost)
    : weights_(std::move(weights)),
      cost_(cost),
      counters_(weights_.size(), 0.0),
      waiting_(weights_.size(), 0) {
  assert(std::ranges::all_of(weights_, [](double w) { return w > 0; }) &&
         "service_counters: weights must be > 0");
}

void service_counters::enqueue(uint32_t t) {
  assert(t < waiting_.size() && "service_counters: unknown tenant");
  if (waiting_[t]++ == 0) lift(t);
}

void service_counters::requeue(uint32_t t) {
  assert(t < waiting_.size() && "service_counters: unknown tenant");
  ++waiting_[t];
}

void service_counters::dequeue(uint32_t t) {
  assert(t < waiting_.size() && waiting_[t] > 0 && "service_counters: dequeue without a waiting request");
  if (--waiting_[t] == 0) last_left_ = t;
}

void service_counters::charge(uint32_t t, uint64_t input_tokens, uint64_t output_tokens) {
  assert(t < counters_.size() && "service_counters: unknown tenant");
  const double cost =
      cost_.input * static_cast<double>(input_tokens) + cost_.output * static_cast<double>(output_tokens);
  counters_[t] += cost / weights_[t];
}

void service_counters::reconfigure(std::vector<double> weights, std::span<const std::optional<uint32_t>> from,
                                   std::vector<uint32_t> waiting) {
  assert(from.size() == weights.size() && waiting.size() == weights.size() &&
         "service_counters: one entry per tenant");
  const double start = floor(std::nullopt).value_or(0.0);
  std::vector<double> counters(weights.size());
  std::optional<uint32_t> last_left;
  for (uint32_t i = 0; i < weights.size(); ++i) {
    counters[i] = from[i] ? counters_[*from[i]] : start;
    if (from[i] && from[i] == last_left_) last_left = i;
  }
  weights_ = std::move(weights);
  counters_ = std::move(counters);
  waiting_ = std::move(waiting);
  last_left_ = last_left;
}

std::optional<double> service_counters::floor(std::optional<uint32_t> except) const {
  std::optional<double> low;
  for (uint32_t u = 0; u < counters_.size(); ++u)
    if (u != except && waiting_[u] > 0) low = std::min(low.value_or(counters_[u]), counters_[u]);
  if (!low && last_left_) low = counters_[*last_left_];
  return low;
}

void service_counters::lift(uint32_t t) {
  if (const auto low = floor(t)) counters_[t] = std::max(counters_[t], *low);
}

}  // namespace hearth
