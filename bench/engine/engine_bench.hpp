#pragma once
// `hearth bench engine`: what the runtime itself costs per step. The same workload (n requests
// decoding together) runs twice through the whole engine (admission, scheduler actor, worker
// actor, sampling, events to a client actor): once on a backend that computes nothing, once on
// the real model. The first gives the runtime's own time per step; the second the real step
// time at that batch, measured in the same run; their ratio is the overhead's share.

#include <cstdio>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "kernels/matmul.hpp"

namespace hearth {

struct engine_bench_options {
  std::string model_path;
  compute_type compute = compute_type::bf16;
  kernel_choice kernels = kernel_choice::automatic;
  uint32_t seqs = 64;    //!< requests running together
  uint32_t prompt = 32;  //!< tokens per prompt
  uint32_t gen = 128;    //!< tokens each request generates
  unsigned threads = 0;  //!< worker kernel threads; 0 = all cores
  bool real_run = true;  //!< false: the null backend's run only (the runtime's own cost)
  //! tcp://HOST:PORT of a `hearth worker` on the same model file: the model's run once more
  //! through it, for what the step's round trip over the network adds. "" = none.
  std::string worker = {};
  std::string worker_credentials = {};  //!< keygen --worker's folder: the worker over TLS
};

struct engine_run {
  uint64_t steps = 0;
  double wall_s = 0;
  double compute_ms_per_step = 0;   //!< inside the backend and the sampler
  double overhead_ms_per_step = 0;  //!< everything else between two steps
};

struct engine_bench_report {
  engine_bench_options opt;
  engine_run null_run;                   //!< on the backend that computes nothing
  engine_run real_run;                   //!< on the model
  std::optional<engine_run> remote_run;  //!< on the model in `hearth worker` (opt.worker)
  double overhead_share = 0;             //!< null overhead per step / real step time (compute + overhead)
};

result<engine_bench_report> run_engine_bench(const engine_bench_options& opt);
void print_engine_bench(const engine_bench_report& r, std::FILE* out);

}  // namespace hearth
