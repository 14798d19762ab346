#include "kernels/quant_dot.hpp"

#include "kernels/cpu_features.hpp"

namespace hearth::quant {

// Defined by quant_kernels.inc, once per instruction set.
namespace avx2 {
void quantize_activations(const float* x, uint32_t n, uint32_t group, act_block* out, float* dsum,
                          int16_t* bsum, int8_t* lanes, bool wide);
void dot_rows(uint32_t type, const std::byte* w, size_t row_bytes, uint32_t rows, uint32_t n_in,
              const activations& x, uint32_t m, float* y, size_t ldy, bool wide);
void dequantize_rows(uint32_t type, const std::byte* w, size_t row_bytes, uint32_t rows, uint32_t n_in,
                     float* out);
}  // namespace avx2
namespace vnni {
void quantize_activations(const float* x, uint32_t n, uint32_t group, act_block* out, float* dsum,
                          int16_t* bsum, int8_t* lanes, bool wide);
void dot_rows(uint32_t type, const std::byte* w, size_t row_bytes, uint32_t rows, uint32_t n_in,
              const activations& x, uint32_t m, float* y, size_t ldy, bool wide);
void dequantize_rows(uint32_t type, const std::byte* w, size_t row_bytes, uint32_t rows, uint32_t n_in,
                     float* out);
}  // namespace vnni

void quantize_activations(isa variant, const float* x, uint32_t n, uint32_t group, act_block* out,
                          float* dsum, int16_t* bsum, int8_t* lanes) {
  // With group 32 only q8_0's wide one-row dots read lanes.
  if (group != 256 && variant != isa::avx512_vnni_zmm) lanes = nullptr;
  const bool wide = variant == isa::avx512_vnni_zmm;
  if (variant != isa::avx2) return vnni::quantize_activations(x, n, group, out, dsum, bsum, lanes, wide);
  avx2::quantize_activations(x, n, group, out, dsum, bsum, lanes, false);
}

const char* to_string(isa i) {
  switch (i) {
    case isa::avx2:
      return "avx2";
    case isa::avx512_vnni:
      return "avx512-vnni";
    case isa::avx512_vnni_zmm:
      return "avx512-vnni-zmm";
  }
  return "?";
}

bool isa_available(isa i) {
  // F16C comes with every AVX2 CPU (and Clang cannot ask for it).
  const bool avx2 = cpu_has(cpu_feature::avx2) && cpu_has(cpu_feature::fma);
  if (i == isa::avx2) return avx2;
  // avx512_vnni_zmm: the same instructions, more of them in zmm.
  return avx2 && cpu_has(cpu_feature::avx512f) && cpu_has(cpu_feature::avx512vl) &&
         cpu_has(cpu_feature::avx512bw) && cpu_has(cpu_feature::avx512_vnni);
}

isa best_isa() {
  return isa_available(isa::avx512_vnni) ? isa::avx512_vnni : isa::avx2;
}

bool has_dot(tensor_type type) {
  using namespace type_number;
  switch (static_cast<uint32_t>(type)) {
    case q4_0:
    case q4_1:
    case q5_0:
    case q5_1:
    case q8_0:
    case q2_K:
    case q3_K:
    case q4_K:
    case q5_K:
    case q6_K:
      return true;
    default:
      return false;
  }
}

void dot_rows(isa variant, tensor_type type, const std::byte* w, size_t row_bytes, uint32_t rows,
              uint32_t n_in, const activations& x, uint32_t m, float* y, size_t ldy) {
  const auto t = static_cast<uint32_t>(type);
  if (variant != isa::avx2)
    return vnni::dot_rows(t, w, row_bytes, rows, n_in, x, m, y, ldy, variant == isa::avx512_vnni_zmm);
  avx2::dot_rows(t, w, row_bytes, rows, n_in, x, m, y, ldy, false);
}

void dequantize_rows(isa variant, tensor_type type, const std::byte* w, size_t row_bytes, uint32_t rows,
                     uint32_t n_in, float* out) {
  const auto t = static_cast<uint32_t>(type);
  if (variant != isa::avx2) return vnni::dequantize_rows(t, w, row_bytes, rows, n_in, out);
  avx2::dequantize_rows(t, w, row_bytes, rows, n_in, out);
}

}  // namespace hearth::quant
