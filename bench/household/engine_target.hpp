#pragma once
// The bench's target over the in-process engine (actors/engine.hpp): `hearth bench serve
// --model` and `hearth bench sweep` start engines themselves. Each request gets a small sink
// actor that forwards its events to the bench and quits after the terminal one.

#include <memory>

#include "actors/worker.hpp"
#include "bench/household/target.hpp"
#include "bench/household/workload.hpp"
#include "engine/config.hpp"
#include "model/tokenizer.hpp"

namespace hearth::household {

class engine_target final : public bench_target {
 public:
  //! Starts an engine with `cfg`; its tenants are the workload's classes (priority, weight,
  //! SLOs), so the policies see them.
  static result<std::unique_ptr<engine_target>> start(engine_config cfg, const workload& w,
                                                      std::shared_ptr<const tokenizer> tok,
                                                      backend_factory make);
  ~engine_target() override;

  void submit(const bench_request& r, std::shared_ptr<bench_sink> sink) override;
  target_gauges gauges() override;
  server_figures figures() override;

 private:
  struct impl;
  explicit engine_target(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

}  // namespace hearth::household
