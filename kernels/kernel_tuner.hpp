#pragma once
// Chooses each linear shape's plan (kernels/matmul_plan.hpp) by timing, at load, the paths this
// CPU has on synthetic weights of that shape at each bucket's m. Which path is fastest is not
// knowable from the feature flags: oneDNN 2.6 accepts bf16 on AVX-512 without bf16 hardware and
// runs it at a quarter of its f32 rate, and whether our kernels beat oneDNN's f32 over widened
// weights depends on the core. Decisions are cached per CPU, thread count and shape in a file under
// the user's cache directory (a model's shapes repeat across its layers and across model files
// of one family and size), so only the first load of a shape on a machine pays for the timing, and
// every later load runs the same kernels (a seed gives the same tokens on every run).

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "kernels/matmul_plan.hpp"
#include "model/tensor_types.hpp"

namespace hearth {

//! One path's measured rates, GFLOP/s at bucket_m; 0 where not measured or where it failed.
struct path_rates {
  matmul_path path;
  std::array<double, n_m_buckets> gflops{};
};

//! The plan over measured rates. Per storage, each bucket takes its fastest path; the storage
//! whose buckets lose least against the fastest of all (the sum over buckets of best / its rate)
//! wins. `incumbent` (the plan taken without measuring, one storage) keeps its storage and each
//! bucket its path unless another is faster by more than `margin` (1.05: 5 %): timings on a noisy
//! machine must not flip a choice that measures the same. Pure.
matmul_plan choose_plan(std::span<const path_rates> rates, const matmul_plan& incumbent,
                        double margin = 1.05);

//! Whether `choice` has a path for `ct` on this CPU (errc::unsupported, saying why, if not):
//! what plan() would refuse at load, told before the weights are read.
status<> check_kernel_choice(compute_type ct, kernel_choice choice);

//! What one shape was given, and why.
struct shape_plan {
  uint32_t n_in = 0, n_out = 0;
  compute_type ct = compute_type::bf16;
  kernel_choice choice = kernel_choice::automatic;
  int threads = 0;
  matmul_plan plan;
  std::vector<path_rates> rates;  //!< what the plan was chosen by; empty for an only path
  std::string why;                //!< "measured", "cached", "only path", or "noisy" (measured on a busy
                                  //!< machine: chosen with a wider margin)
  double tune_seconds = 0;        //!< time spent measuring it
  tensor_type weights = tensor_type::f32;  //!< the type its weights are kept in, as stored in the
                                           //!< file (quantized), or f32: converted at load
};

//! The cache file's first line. Its version counts changes to the kernels' speeds: a file written
//! under another is measured again, since its timings no longer say which path is faster (v2: the
//! hearth-dpbf16 of 7 to 48 rows that asks for its next block into L2; v3: the quantized dots eight
//! rows at a time with VNNI; v4: the quantized one-row dots with a super-block in the lanes, and
//! hearth-w8, not oneDNN's bf16, the incumbent without bf16 hardware; v5: quant-dot-zmm, and the
//! eight-row dots' scales loaded, not gathered; v6: hearth-dpbf16 reading ahead a region of K at a
//! time up to 48 rows, and decode buckets timed on 2 Mi-weight slices; v7: the sixteen-row groups
//! decoded in zmms and asking for the next group a quarter at a time; v8: hearth-dpbf16's shorter
//! regions up to 6 rows, and a single row's weights read in 32-byte halves; v9: the VNNI one-row
//! dots asking for their rows 4 KiB ahead, and q4_K's read in pairs of super-blocks).
inline constexpr std::string_view kernel_cache_header =
    "# hearth kernel plans v9: cpu threads compute choice n_in n_out paths";

//! The cache file's lines, one decision each: cpu, threads, compute (with "+q4_K" for weights
//! kept quantized), choice, n_in, n_out, the plan's paths and the measured rates, tab-separated. Malformed
//! lines are skipped (the file is only a cache).
std::string format_cache_line(std::string_view cpu, const shape_plan& s);
std::optional<shape_plan> parse_cache_line(std::string_view line, std::string& cpu);

class kernel_tuner {
 public:
  //! cache_path empty: no cache file. cpu names this CPU in it.
  kernel_tuner(std::string cache_path, std::string cpu);

  //! The plan for a shape on the calling thread's kernel_threads(): remembered, cached, or
  //! measured now (taking a process-wide lock, so that two workers loading at once do not time
  //! each other). errc::unsupported for a choice this CPU or compute type cannot run. `weights`:
  //! a quantized type with dot kernels for a linear kept as stored (its paths are the quantized
  //! ones, timed on blocks of that type), f32 for weights converted at load.
  result<matmul_plan> plan(uint32_t n_in, uint32_t n_out, compute_type ct, kernel_choice choice,
                           tensor_type weights = tensor_type::f32);

  //! Every shape decided so far, in order.
  std::vector<shape_plan> decisions() const;
  const std::string& cache_path() const { return cache_path_; }

 private:
  void load_cache();
  //! Writes a measured decision to the cache file, or returns the one another process wrote there
  //! for the same shape since this one loaded it.
  std::optional<shape_plan> settle(const shape_plan& mine, std::span<const matmul_path> paths) const;

  std::string cache_path_, cpu_;
  mutable std::mutex mutex_;
  bool cache_loaded_ = false;
  std::vector<shape_plan> cached_;   // from the file, for this CPU
  std::vector<shape_plan> decided_;  // this process's
};

//! CPU time in clock ticks: the whole machine's busy time (user, nice, system, irq, softirq and
//! steal, which a VM's host takes) and this process's own.
struct cpu_ticks {
  double machine_busy = 0, self = 0;
};
//! From /proc/stat and /proc/self/stat; nullopt where they cannot be read.
std::optional<cpu_ticks> read_cpu_ticks();
//! The share of all `cores`' time over `seconds` that went to other processes (or the VM's host)
//! between two readings, 0 to 1. Pure.
double others_cpu_share(const cpu_ticks& before, const cpu_ticks& after, double seconds,
                        double ticks_per_second, int cores);

//! What an operator should hear of `decisions` timed on a busy machine, which the cache keeps for
//! every later load like any other: one sentence naming those shapes and how to time them again
//! (delete `cache_path`), or "" when none was. Pure.
std::string busy_timing_note(std::span<const shape_plan> decisions, const std::string& cache_path);

//! "model name | isa flags" of this CPU, from /proc/cpuinfo.
std::string cpu_identity();
//! The process's tuner: the cache file is $HEARTH_KERNEL_CACHE ("off": none), else
//! $CACHE_DIRECTORY/kernel-plans.tsv (a systemd service's CacheDirectory=), else
//! $XDG_CACHE_HOME/hearth/kernel-plans.tsv, else ~/.cache/hearth/kernel-plans.tsv.
kernel_tuner& process_tuner();

}  // namespace hearth
