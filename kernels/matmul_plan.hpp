#pragma once
// Which kernel multiplies a linear layer. Several can (oneDNN's matmuls, our bf16-weight kernels,
// oneDNN's f32 matmul over weights widened per call), and which is fastest depends on the CPU and
// on m, the rows of one call: on an AVX-512 CPU without bf16 hardware oneDNN accepts bf16 and runs
// it at a quarter of its own f32 rate. So each linear carries a plan, one path per bucket of m,
// chosen by measuring (kernels/kernel_tuner.hpp). No oneDNN here.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/compute_type.hpp"

namespace hearth {

enum class matmul_path : uint8_t {
  onednn_f32,   //!< oneDNN f32 over f32 weights (compute f32)
  onednn_bf16,  //!< oneDNN bf16 over bf16 weights in its blocked layout
  hearth_w8,    //!< our kernel over bf16 panels, 8 lanes (kernels/bf16_gemm.hpp)
  hearth_w16,   //!< the same, 16 lanes (AVX-512)
  widened_f32,  //!< bf16 panels widened to f32 per call, a cache-sized slice at a time, for oneDNN f32
  quant_dot,    //!< quantized blocks as stored, dotted against 8-bit activations (kernels/quant_dot.hpp)
  quant_f32,    //!< quantized blocks dequantized per call, a slice at a time, for oneDNN f32
  quant_bf16,   //!< quantized blocks dequantized per call into bf16 panels, for our 8-lane kernel
  quant_onednn_bf16,  //!< quantized blocks dequantized per call into bf16 slices, for oneDNN bf16
  hearth_dpbf16,      //!< our vdpbf16ps kernel over oneDNN bf16's blocked weights (kernels/dpbf16_matmul.hpp)
  quant_dpbf16,       //!< quantized blocks dequantized per call, 64 rows at a time on the thread that
                      //!< multiplies them, into blocked bf16 for hearth-dpbf16's kernel
  quant_dot_zmm,      //!< quant_dot with 16 weight rows to a zmm (quant::isa::avx512_vnni_zmm)
};
inline constexpr matmul_path all_matmul_paths[] = {
    matmul_path::onednn_f32,    matmul_path::onednn_bf16,  matmul_path::hearth_w8,
    matmul_path::hearth_w16,    matmul_path::widened_f32,  matmul_path::quant_dot,
    matmul_path::quant_f32,     matmul_path::quant_bf16,   matmul_path::quant_onednn_bf16,
    matmul_path::hearth_dpbf16, matmul_path::quant_dpbf16, matmul_path::quant_dot_zmm};
//! "onednn-f32", "onednn-bf16", "hearth-w8", "hearth-w16", "widened-f32", "quant-dot", "quant-f32",
//! "quant-bf16", "quant-onednn-bf16", "hearth-dpbf16", "quant-dpbf16", "quant-dot-zmm".
const char* to_string(matmul_path p);
std::optional<matmul_path> matmul_path_from_name(std::string_view name);

//! How a linear keeps its weights; the paths of one plan share it. quantized: the file's blocks,
//! read in place from its mapping.
enum class weight_storage { onednn_f32, onednn_bf16, bf16_panels, quantized };
weight_storage storage_of(matmul_path p);

//! Buckets of m: [1, 4), [4, 32), [32, 128), [128, ...), measured at bucket_m (decode, a batch
//! of decodes, a full batch of decodes or a short chunk, a prefill chunk). The third bucket is
//! where a path's fixed cost per call meets its cost per row: 1b q4_k_m at m = 64 took the
//! prefill path chosen at m = 256, dequantizing every weight per call, and a step of 64 decodes
//! ran 1043 ms where 16 took 139 (AMD EPYC Zen 4), slower in aggregate than a batch of 16.
inline constexpr uint32_t n_m_buckets = 4;
inline constexpr std::array<uint32_t, n_m_buckets> bucket_m{1, 16, 64, 256};
inline uint32_t bucket_of(uint32_t m) {
  return m < 4 ? 0 : m < 32 ? 1 : m < 128 ? 2 : 3;
}

//! The plan for weights kept quantized before the tuner has measured them: dots while m is small;
//! for prefill chunks, where the dots' per-row work would dominate, bf16 panels dequantized per
//! call for our GEMM kernel (on the AMD EPYC (AVX2), 1b q8_0 at m = 64: 98 GFLOP/s through oneDNN
//! f32 slices, quant-f32). With bf16 hardware oneDNN's bf16 over dequantized slices is faster.
inline constexpr std::array<matmul_path, n_m_buckets> quantized_paths{
    matmul_path::quant_dot, matmul_path::quant_dot, matmul_path::quant_dot, matmul_path::quant_bf16};

struct matmul_plan {
  std::array<matmul_path, n_m_buckets> paths{};

  static matmul_plan uniform(matmul_path p) { return {{p, p, p, p}}; }
  matmul_path path_for(uint32_t m) const { return paths[bucket_of(m)]; }
  weight_storage storage() const { return storage_of(paths[0]); }
  //! Whether every path shares one storage.
  bool consistent() const;
  bool operator==(const matmul_plan&) const = default;
};

//! Which paths a load may choose among: every one this CPU has (auto), oneDNN's matmul in the
//! compute type only (onednn), our own kernels only (hearth; bf16 only).
enum class kernel_choice { automatic, onednn, hearth };
//! "auto", "onednn", "hearth".
const char* to_string(kernel_choice c);
std::optional<kernel_choice> kernel_choice_from_name(std::string_view name);

//! "hearth-w8" when uniform, else "hearth-w8/hearth-w8/hearth-w8/widened-f32" (by bucket).
std::string describe(const matmul_plan& plan);

}  // namespace hearth
