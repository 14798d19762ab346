#pragma once
// Several targets behind one: each request goes to the lane chosen for it before the run, the
// gauges and figures come from the first lane's server. So one run can send alternate requests
// over two gateways of one server (`hearth bench serve --via both`), under the same load, and
// compare what each gateway costs (transport_report.hpp).

#include <cstdint>
#include <memory>
#include <vector>

#include "bench/household/target.hpp"

namespace hearth::household {

class split_target final : public bench_target {
 public:
  //! `lane_of[index]`: which of `lanes` request `index` goes to.
  split_target(std::vector<std::unique_ptr<bench_target>> lanes, std::vector<uint8_t> lane_of);
  void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) override;
  target_gauges gauges() override { return lanes_.front()->gauges(); }
  server_figures figures() override { return lanes_.front()->figures(); }

 private:
  std::vector<std::unique_ptr<bench_target>> lanes_;
  std::vector<uint8_t> lane_of_;
};

//! Alternates two lanes within each class: the k-th request of a class goes to lane k % 2, so
//! both lanes carry the same mix. `cls[index]`: each request's class.
std::vector<uint8_t> alternate_lanes(const std::vector<uint32_t>& cls);

}  // namespace hearth::household
