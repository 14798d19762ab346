#include "actors/metrics_types.hpp"

#include <algorithm>
#include <cmath>

namespace hearth {

namespace {

constexpr double base_ms = 1e-3;  // bucket 0 holds everything up to 1 us
const double log_step = std::log(1.01);

size_t bucket_of(double ms) {
  if (!(ms > base_ms)) return 0;
  return static_cast<size_t>(std::log(ms / base_ms) / log_step) + 1;
}

double bucket_upper_ms(size_t b) {
  return base_ms * std::exp(log_step * static_cast<double>(b));
}

}  // namespace

void latency_histogram::add(double ms) {
  ++buckets_[std::min(bucket_of(ms), n_buckets - 1)];
  ++count_;
  sum_ += ms;
  max_ = std::max(max_, ms);
}

double latency_histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const auto rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  uint64_t seen = 0;
  for (size_t b = 0; b < n_buckets; ++b) {
    seen += buckets_[b];
    if (seen < std::max<uint64_t>(rank, 1)) continue;
    return b == n_buckets - 1 ? max_ : std::min(bucket_upper_ms(b), max_);
  }
  return max_;
}

uint64_t latency_histogram::count_at_most(double ms) const {
  const size_t last = std::min(bucket_of(ms), n_buckets - 1);
  uint64_t n = 0;
  for (size_t b = 0; b <= last; ++b) n += buckets_[b];
  return n;
}

latency_summary summarize(const latency_histogram& h, std::span<const double> bounds) {
  latency_summary s{h.count(),        h.mean(), h.quantile(0.5), h.quantile(0.9),
                    h.quantile(0.99), h.max(),  h.sum()};
  for (const double b : bounds) s.at_most.push_back(h.count_at_most(b));
  return s;
}

}  // namespace hearth
