#pragma once
// `hearth bench kernels`: one run that measures the machine's ceilings (GEMM at the model's own
// shapes, STREAM triad bandwidth) and the CPU backend's prefill and decode against them, on the
// calling thread's kernel_threads(). The CLI prints the report and writes it as JSON.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kernels/cpu_backend.hpp"
#include "kernels/kernel_tuner.hpp"

namespace hearth {

struct kernels_bench_options {
  std::string model_path;
  compute_type compute = compute_type::bf16;
  kernel_choice kernels = kernel_choice::automatic;
  bool quick = false;  //!< seconds instead of minutes: fewer reps, small contexts and batches
};

struct gemm_shape_result {
  std::string name;  //!< qkv, wo, gate_up, down, head
  uint32_t m = 0, n_in = 0, n_out = 0;
  //! Every path this CPU has in the compute type, and oneDNN's f32 on an f32 copy of the weights.
  std::vector<std::pair<matmul_path, double>> paths;
  double gflops = 0;  //!< the ceiling: the fastest of them
};

//! The plan a model shape got at load, and the rates it was chosen by.
struct shape_plan_result {
  std::string name;
  shape_plan plan;
};

struct prefill_result {
  uint32_t tokens = 0;
  double seconds = 0;  //!< median of the timed runs
  double tok_per_s = 0;
  double gflop = 0;  //!< linear + attention FLOPs of one forward (see kernels_bench.cpp)
  double gflops = 0;
  double pct_of_gemm = 0;  //!< of the combined GEMM ceiling
};

struct decode_result {
  uint32_t batch = 0, context = 0;
  double step_seconds = 0;    //!< median time of one iteration of the whole batch
  double tok_per_s = 0;       //!< batch / step_seconds
  double bytes_per_step = 0;  //!< weights without the embedding table + KV read
  double gbps = 0;
  double stream_gbps = 0;     //!< median of the triad's runs between this context's rounds
  double pct_of_stream = 0;   //!< gbps / stream_gbps
  double gflop_per_step = 0;  //!< linear + attention FLOPs of one iteration
  double gflops = 0;
  double pct_of_gemm = 0;      //!< of the combined GEMM ceiling
  double vs_batch1 = 0;        //!< tok_per_s / tok_per_s at batch 1, same context
  double vs_batch1_bound = 0;  //!< the roofline's bound on vs_batch1 (bench/README.md)
};

struct kernels_bench_report {
  // Configuration
  std::string model_path;
  hparams hp;
  int threads = 0;
  compute_type compute = compute_type::bf16;
  kernel_choice kernels = kernel_choice::automatic;
  std::string cpu;         //!< cpu_identity()
  std::string plan_cache;  //!< the tuner's cache file, or ""
  std::vector<shape_plan_result> plans;
  kv_dtype kv = kv_dtype::bf16;
  uint32_t block_size = 0;
  bool bf16_attention = false;  //!< attention multiplies in bf16 (vdpbf16ps)
  bool quick = false;
  // Ceilings
  std::vector<gemm_shape_result> gemm;
  double gemm_combined_gflops = 0;  //!< FLOP-weighted over one token's forward
  double stream_bytes = 0;          //!< of the three arrays together
  double stream_gbps = 0;           //!< median of every run beside the decode rows; the roofline's
  // The backend
  std::vector<prefill_result> prefill;
  std::vector<decode_result> decode;
  double batch16_over_batch1 = 0;  //!< aggregate tok/s ratio at the shortest context; 0 if not run
  double batch16_bound = 0;        //!< its roofline bound
  double batch16_pct_of_gemm = 0;  //!< that batch-16 step's GFLOP/s, % of the GEMM ceiling
  // Memory
  double weight_bytes = 0;  //!< as computed, embedding table included
  double embedding_bytes = 0;
  double kv_pool_bytes = 0;
  double peak_rss_bytes = 0;  //!< the backend's: before the GEMM ceiling runs, the triad's arrays not counted
  double rss_ratio = 0;       //!< peak_rss / (weights + KV pool)
  double file_bytes = 0;      //!< the model file's size
  double rss_vs_file = 0;     //!< peak_rss / (file + KV pool): what keeping weights as stored costs
  double load_seconds = 0;    //!< opening the file to a backend ready to run
};

//! Loads the model and measures everything; errors name the file or the step that failed.
result<kernels_bench_report> run_kernels_bench(const kernels_bench_options& opt);

//! The report as a readable table.
void print_kernels_bench(const kernels_bench_report& r, std::FILE* out);

}  // namespace hearth
