#include "bench/household/split_target.hpp"

#include <cassert>
#include <map>

namespace hearth::household {

split_target::split_target(std::vector<std::unique_ptr<bench_target>> lanes, std::vector<uint8_t> lane_of)
    : lanes_(std::move(lanes)), lane_of_(std::move(lane_of)) {
  assert(!lanes_.empty() && "split_target: no lane");
}

void split_target::submit(const bench_request& r, std::shared_ptr<bench_sink> sink) {
  assert(r.index < lane_of_.size() && lane_of_[r.index] < lanes_.size() &&
         "split_target: no lane for a request");
  lanes_[lane_of_[r.index]]->submit(r, std::move(sink));
}

std::vector<uint8_t> alternate_lanes(const std::vector<uint32_t>& cls) {
  std::map<uint32_t, uint32_t> seen;
  std::vector<uint8_t> lane;
  lane.reserve(cls.size());
  for (uint32_t c : cls) lane.push_back(static_cast<uint8_t>(seen[c]++ % 2));
  return lane;
}

}  // namespace hearth::household
