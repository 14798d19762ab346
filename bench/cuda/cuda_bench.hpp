#pragma once
// `hearth bench kernels --backend cuda` and scripts/gpu-check.sh: one run that measures the
// device's ceilings (device-to-device copy bandwidth, cuBLASLt at the model's shapes) and the CUDA
// backend's prefill and decode against them, as shares (docs/cuda.md gives the targets).

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels/compute_type.hpp"
#include "model/hparams.hpp"

namespace hearth {

struct cuda_bench_options {
  std::string model_path;
  compute_type compute = compute_type::bf16;
  int device = 0;
  bool quick = false;  //!< seconds: small contexts, batches and buffers
};

struct cuda_gemm_result {
  std::string name;  //!< qkv, wo, gate_up, down, head
  uint32_t m = 0, n_in = 0, n_out = 0;
  double tflops = 0;
};

struct cuda_prefill_result {
  uint32_t tokens = 0;
  double seconds = 0;  //!< median of the timed runs
  double tok_per_s = 0;
  double tflops = 0;
  double pct_of_gemm = 0;  //!< of the FLOP-weighted cuBLASLt ceiling
};

struct cuda_decode_result {
  uint32_t batch = 0, context = 0;
  double step_seconds = 0;    //!< median of the timed iterations
  double tok_per_s = 0;       //!< batch / step_seconds
  double bytes_per_step = 0;  //!< weights without the embedding table, and the KV read
  double gbps = 0;
  double pct_of_copy = 0;  //!< of the copy bandwidth
  double vs_batch1 = 0;    //!< tok_per_s / tok_per_s at batch 1, same context
};

struct cuda_bench_report {
  std::string model_path, device_name;
  hparams hp;
  compute_type compute = compute_type::bf16;
  int device = 0;
  bool quick = false;
  double copy_gbps = 0;  //!< device-to-device copy, bytes read and written
  std::vector<cuda_gemm_result> gemm;
  double gemm_combined_tflops = 0;  //!< FLOP-weighted over one token's forward
  std::vector<cuda_prefill_result> prefill;
  std::vector<cuda_decode_result> decode;
  double weight_bytes = 0, embedding_bytes = 0, load_seconds = 0;
};

//! Loads the model on the device and measures everything; errors name the file or the step.
result<cuda_bench_report> run_cuda_bench(const cuda_bench_options& opt);
void print_cuda_bench(const cuda_bench_report& r, std::FILE* out);
//! The report as JSON text.
std::string cuda_bench_json(const cuda_bench_report& r);

}  // namespace hearth
